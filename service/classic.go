package service

import (
	"encoding/json"
	"net/http"

	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/skills"
)

// The classic Code Executor routes, so a client written to that spec runs
// unchanged: GET / (discovery), GET /skills/list, and POST /skills/execute
// with the skill named in the body, answering {"result": <the output>,
// "provenance"}. GET /health, GET /skills/{id} and GET /skills/{id}/schema
// are shared with our own routes. Errors are the service's, with their
// stable codes. POST /skills/execute ignores fields of its body it does not
// know, as the classic service does (our own routes refuse them).
func (s *Service) classicRoutes(route func(string, func(http.ResponseWriter, *http.Request) error)) {
	route("GET /{$}", s.root)
	route("GET /skills/list", s.classicList)
	route("POST /skills/execute", s.classicExecute)
}

// rootInfo is GET /'s answer.
type rootInfo struct {
	Name    string            `json:"name"`
	Version string            `json:"version"`
	Links   map[string]string `json:"links"`
}

func (s *Service) root(w http.ResponseWriter, r *http.Request) error {
	s.writeJSON(w, http.StatusOK, rootInfo{Name: "wasmpy", Version: s.cfg.Version, Links: map[string]string{
		"health": "/health", "skills": "/skills", "skills_list": "/skills/list", "execute": "/skills/execute",
		"executions": "/executions/{id}", "metrics": "/metrics", "openapi": "/openapi.json",
	}})
	return nil
}

// skillList is GET /skills and GET /skills/list's answer.
type skillList struct {
	Skills []skills.Info `json:"skills"`
	Count  int           `json:"count"`
}

// skillList lists every skill as it runs by default, with its versions;
// one whose every version is disabled is listed, as disabled.
func (s *Service) skillList() skillList {
	list := skillList{Skills: []skills.Info{}}
	for _, name := range s.cfg.Registry.Names() {
		if v, ok := s.cfg.Registry.Find(name, ""); ok {
			list.Skills = append(list.Skills, s.describe(v))
		}
	}
	list.Count = len(list.Skills)
	return list
}

// describe is a version's description, with whether it is disabled and
// the skill's registered versions.
func (s *Service) describe(v skills.Version) skills.Info {
	in := s.cfg.Executor.Describe(v.Skill)
	in.Disabled = v.Disabled
	if v.Registration != nil {
		for _, o := range s.cfg.Registry.Versions(v.Name) {
			in.Versions = append(in.Versions, skills.VersionInfo{Version: o.Version, Disabled: o.Disabled, Registration: o.Registration})
		}
	}
	return in
}

func (s *Service) classicList(w http.ResponseWriter, r *http.Request) error {
	s.writeJSON(w, http.StatusOK, s.skillList())
	return nil
}

// classicBody is POST /skills/execute's body: the skill is named in it.
type classicBody struct {
	Skill     string          `json:"skill"`
	Version   string          `json:"version,omitempty"` // "" for the newest enabled
	Args      json.RawMessage `json:"args"`
	ActorID   string          `json:"actor_id"`
	ActorType string          `json:"actor_type"`
	Approved  bool            `json:"approved"`
	Tier      string          `json:"tier,omitempty"` // a tier stricter than the skill's own; default: its own
}

// classicAnswer is POST /skills/execute's answer: the skill's output as
// "result", and the provenance record (which carries the classic field
// names). A failed run's answer has "error" too.
type classicAnswer struct {
	Error      *skills.Error    `json:"error,omitempty"`
	Result     json.RawMessage  `json:"result"`
	Provenance *runs.RecordJSON `json:"provenance"`
}

func (s *Service) classicExecute(w http.ResponseWriter, r *http.Request) error {
	var body classicBody
	if err := s.decodeLenient(w, r, &body); err != nil {
		return err
	}
	if body.Skill == "" {
		return fail(CodeBadRequest, `"skill" is empty: name the skill to run (GET /skills/list lists them)`)
	}
	sk, err := s.runnable(r, body.Skill, body.Version)
	if err != nil {
		return err
	}
	req := runs.Request{Args: body.Args, ActorID: body.ActorID, ActorType: body.ActorType, Approved: body.Approved, Tier: body.Tier}
	return s.executeSkill(w, r, sk, req, func(x *runs.Execution) any {
		a := classicAnswer{Error: x.Error, Result: json.RawMessage("null"), Provenance: runs.ClassicRecord(x.Record)}
		if x.Result != nil && len(x.Result.Output) > 0 {
			a.Result = x.Result.Output
		}
		return a
	})
}
