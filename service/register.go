package service

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/skills"
)

// The routes that change the registered skills, each for an admin token
// only, each change on the audit trail:
//
//	POST   /skills/register                           the three files → 201, the version registered
//	GET    /skills/{name}/versions/{version}           one version (anyone)
//	POST   /skills/{name}/versions/{version}/disable   → the version, disabled: it is listed, and does not run
//	POST   /skills/{name}/versions/{version}/enable    → the version, enabled
//	DELETE /skills/{name}/versions/{version}           → 204
//	GET    /audit?skill=NAME&limit=N                   who changed what, when, with the files' hash
func (s *Service) registryRoutes(route func(string, func(http.ResponseWriter, *http.Request) error)) {
	route("POST /skills/register", s.register)
	route("GET /skills/{name}/versions/{version}", s.getSkill)
	route("POST /skills/{name}/versions/{version}/disable", s.setDisabled(true))
	route("POST /skills/{name}/versions/{version}/enable", s.setDisabled(false))
	route("DELETE /skills/{name}/versions/{version}", s.deleteVersion)
	route("GET /audit", s.audit)
}

// registerBody is POST /skills/register's JSON body: the skill's files,
// skill.yaml, schema.json and the handler's module, by name.
type registerBody struct {
	Files map[string]string `json:"files"`
}

func (s *Service) register(w http.ResponseWriter, r *http.Request) error {
	tok, err := admin(r)
	if err != nil {
		return err
	}
	files, err := s.registerFiles(w, r)
	if err != nil {
		return err
	}
	sk, err := s.cfg.Registry.Register(r.Context(), files, tok.Name)
	if err != nil {
		return err
	}
	info(r).skill = sk.Name
	s.log.Info("skill registered", "skill", sk.Name, "version", sk.Version, "by", tok.Name, "hash", sk.Registration.Hash)
	w.Header().Set("Location", "/skills/"+sk.Name+"/versions/"+sk.Version)
	s.writeJSON(w, http.StatusCreated, s.describe(skills.Version{Skill: sk}))
	return nil
}

// registerFiles reads the files of POST /skills/register: a JSON body
// ({"files": {name: content}}), or multipart/form-data with one part per
// file, named by its file name (curl -F skill.yaml=@skill.yaml ...).
func (s *Service) registerFiles(w http.ResponseWriter, r *http.Request) (map[string][]byte, error) {
	files := map[string][]byte{}
	ct := r.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	if mt != "multipart/form-data" && mt != "application/json" {
		return nil, fail(CodeUnsupportedMediaType, "send the files as application/json ({\"files\": {name: content}}) or multipart/form-data (one part per file), not %q", ct)
	}
	if mt == "application/json" {
		var body registerBody
		if err := s.decodeBody(w, r, &body); err != nil {
			return nil, err
		}
		for name, content := range body.Files {
			files[name] = []byte(content)
		}
	} else {
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		mr, err := r.MultipartReader()
		if err != nil {
			return nil, fail(CodeBadRequest, "the multipart body: %v", err)
		}
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, bodyError(err)
			}
			name := part.FormName()
			if name == "" {
				return nil, fail(CodeBadRequest, "a part of the multipart body has no name: name each part by its file (skill.yaml, schema.json, handler.py)")
			}
			if _, dup := files[name]; dup {
				return nil, fail(CodeBadRequest, "file %q is given twice", name)
			}
			if files[name], err = io.ReadAll(part); err != nil {
				return nil, bodyError(err)
			}
		}
	}
	if len(files) == 0 {
		return nil, fail(CodeBadRequest, "no files: send skill.yaml, schema.json and the handler's module")
	}
	return files, nil
}

// bodyError is a request body that could not be read: too large, or cut.
func bodyError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return fail(CodeBodyTooLarge, "the request body is larger than %d bytes", tooBig.Limit)
	}
	return fail(CodeBadRequest, "the multipart body: %v", err)
}

func (s *Service) setDisabled(disabled bool) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		tok, err := admin(r)
		if err != nil {
			return err
		}
		name, version := r.PathValue("name"), r.PathValue("version")
		info(r).skill = name
		if err := s.cfg.Registry.SetDisabled(r.Context(), name, version, disabled, tok.Name); err != nil {
			return err
		}
		s.log.Info("skill version changed", "skill", name, "version", version, "disabled", disabled, "by", tok.Name)
		return s.getSkill(w, r)
	}
}

func (s *Service) deleteVersion(w http.ResponseWriter, r *http.Request) error {
	tok, err := admin(r)
	if err != nil {
		return err
	}
	name, version := r.PathValue("name"), r.PathValue("version")
	info(r).skill = name
	if err := s.cfg.Registry.Delete(r.Context(), name, version, tok.Name); err != nil {
		return err
	}
	s.log.Info("skill version deleted", "skill", name, "version", version, "by", tok.Name)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// auditTrail is GET /audit's answer, newest first.
type auditTrail struct {
	Entries []*provenance.AuditEntry `json:"entries"`
}

// maxAuditLimit bounds GET /audit's limit.
const maxAuditLimit = 1000

func (s *Service) audit(w http.ResponseWriter, r *http.Request) error {
	if _, err := admin(r); err != nil {
		return err
	}
	f := provenance.AuditFilter{Skill: r.URL.Query().Get("skill")}
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxAuditLimit {
			return fail(CodeBadRequest, "limit: want 1 to %d, got %q", maxAuditLimit, l)
		}
		f.Limit = n
	}
	entries, err := s.cfg.Registry.Audit(r.Context(), f)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, auditTrail{Entries: entries})
	return nil
}
