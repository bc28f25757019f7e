package wasmpy

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"regexp"

	"github.com/wasmpy/wasmpy/wasm"
	"github.com/wasmpy/wasmpy/workspace"
)

// A saved session is:
//
//	magic "wasmpy-session\n" and a version byte
//	the header's length (uint32, little-endian) and the header (JSON)
//	the body, deflated: the memory state (wasm.State's encoding) and the
//	  overlay (JSON), each after its length (uint64)
//	the SHA-256 of everything before it
//
// The header names what the session was made with, so that a sandbox with
// another interpreter, standard library, package sets or preload refuses
// it before reading the body.
var sessionMagic = []byte("wasmpy-session\n")

const sessionVersion = 1

// savedHeader is a saved session's header.
type savedHeader struct {
	ID          string          `json:"id"`
	Turns       int             `json:"turns"`
	Interpreter InterpreterInfo `json:"interpreter"`
	Packages    []PackageSet    `json:"packages"`
	ImageKey    string          `json:"image_key"` // wasm.Engine.Key
	StateHash   string          `json:"state_hash"`
	Fresh       bool            `json:"fresh,omitempty"` // no turn has changed the memory yet
}

// Save writes the session's state, compressed, to w: pages of memory that
// differ from the interpreter's image and the workspace overlay. It waits
// for a turn in progress to end.
func (s *Session) Save(w io.Writer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed != nil {
		return s.closed
	}
	key := s.sb.engine.Key()
	hdr := savedHeader{ID: s.id, Turns: s.turns, Interpreter: s.sb.Interpreter(), Packages: s.sb.Packages(),
		ImageKey: key, StateHash: s.state.Hash(key), Fresh: s.state.mem == nil}
	hj, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	var mem []byte
	if s.state.mem != nil {
		if mem, err = s.state.mem.MarshalBinary(); err != nil {
			return err
		}
	}
	ov, err := json.Marshal(s.state.overlay)
	if err != nil {
		return err
	}
	h := sha256.New()
	out := io.MultiWriter(w, h)
	head := append(append(bytes.Clone(sessionMagic), sessionVersion), binary.LittleEndian.AppendUint32(nil, uint32(len(hj)))...)
	if _, err := out.Write(append(head, hj...)); err != nil {
		return err
	}
	zw, _ := flate.NewWriter(out, flate.BestSpeed)
	for _, part := range [][]byte{mem, ov} {
		if _, err := zw.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(part)))); err != nil {
			return err
		}
		if _, err := zw.Write(part); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	_, err = w.Write(h.Sum(nil))
	return err
}

// RestoreSession opens a session from what Session.Save wrote, in this
// sandbox or another one (in another process) with the same interpreter,
// standard library, package sets and preload. It keeps the saved session's
// id. A file that is not a saved session, is cut short or altered, or was
// made with another interpreter is refused with an error that says so;
// nothing runs.
func (s *Sandbox) RestoreSession(ctx context.Context, r io.Reader) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	max := s.sessions.limits.MaxStateBytes
	// The saved form is compressed: at worst a little larger than the state.
	raw, err := io.ReadAll(io.LimitReader(r, max+max/16+1<<20))
	if err != nil {
		return nil, fmt.Errorf("wasmpy: reading the saved session: %w", err)
	}
	hdr, body, err := s.checkSaved(raw, max)
	if err != nil {
		return nil, err
	}
	st, err := s.decodeBody(hdr, body, max)
	if err != nil {
		return nil, err
	}
	return s.openSession(hdr.ID, st, hdr.Turns)
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func errSaved(format string, args ...any) error {
	return fmt.Errorf("wasmpy: saved session: "+format, args...)
}

// checkSaved checks the envelope and the header, and returns the body.
func (s *Sandbox) checkSaved(raw []byte, max int64) (*savedHeader, []byte, error) {
	n := len(sessionMagic)
	if len(raw) < n+1 || !bytes.Equal(raw[:n], sessionMagic) {
		return nil, nil, errSaved("not a wasmpy saved session")
	}
	if v := raw[n]; v != sessionVersion {
		return nil, nil, errSaved("version %d, this wasmpy reads version %d", v, sessionVersion)
	}
	if int64(len(raw)) > max+max/16+1<<20 {
		return nil, nil, errSaved("larger than the limit of %d bytes of state", max)
	}
	if len(raw) < n+1+4+sha256.Size {
		return nil, nil, errSaved("truncated")
	}
	sum := sha256.Sum256(raw[:len(raw)-sha256.Size])
	if !bytes.Equal(sum[:], raw[len(raw)-sha256.Size:]) {
		return nil, nil, errSaved("corrupt or truncated (checksum mismatch)")
	}
	raw = raw[n+1 : len(raw)-sha256.Size]
	hl := binary.LittleEndian.Uint32(raw)
	if uint64(hl) > uint64(len(raw)-4) {
		return nil, nil, errSaved("header runs past the end")
	}
	var hdr savedHeader
	if err := json.Unmarshal(raw[4:4+hl], &hdr); err != nil {
		return nil, nil, errSaved("bad header: %v", err)
	}
	if !uuidRE.MatchString(hdr.ID) || hdr.Turns < 0 {
		return nil, nil, errSaved("bad header: id %q, %d turns", hdr.ID, hdr.Turns)
	}
	mine := s.Interpreter()
	switch {
	case hdr.Interpreter.SHA256 != mine.SHA256:
		return nil, nil, fmt.Errorf("%w: it was made with %s %s (sha256 %.12s), this sandbox runs %s %s (sha256 %.12s)", ErrForeignSession,
			hdr.Interpreter.Kind, hdr.Interpreter.Version, hdr.Interpreter.SHA256, mine.Kind, mine.Version, mine.SHA256)
	case hdr.ImageKey != s.engine.Key():
		return nil, nil, fmt.Errorf("%w: same interpreter, but another standard library, package sets (%s here, %s there) or preload",
			ErrForeignSession, setNames(s.sets), setNames(hdr.Packages))
	}
	return &hdr, raw[4+hl:], nil
}

func setNames(sets []PackageSet) string {
	if len(sets) == 0 {
		return "none"
	}
	var b bytes.Buffer
	for i, p := range sets {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.Name)
	}
	return b.String()
}

// decodeBody inflates the body, within max bytes of state, and checks it:
// the memory's page table, the overlay's paths and limits, and the hash
// the header claims.
func (s *Sandbox) decodeBody(hdr *savedHeader, body []byte, max int64) (*sessionState, error) {
	zr := flate.NewReader(bytes.NewReader(body))
	defer zr.Close()
	part := func(what string) ([]byte, error) {
		var n [8]byte
		if _, err := io.ReadFull(zr, n[:]); err != nil {
			return nil, errSaved("%s: %v", what, err)
		}
		size := binary.LittleEndian.Uint64(n[:])
		if size > uint64(max) {
			return nil, errSaved("%s of %d bytes is past the limit of %d", what, size, max)
		}
		b := make([]byte, size)
		if _, err := io.ReadFull(zr, b); err != nil {
			return nil, errSaved("%s: %v", what, err)
		}
		return b, nil
	}
	memBytes, err := part("memory")
	if err != nil {
		return nil, err
	}
	ovBytes, err := part("overlay")
	if err != nil {
		return nil, err
	}
	if n, _ := zr.Read(make([]byte, 1)); n > 0 {
		return nil, errSaved("data after the overlay")
	}
	st := &sessionState{overlay: &workspace.Overlay{}}
	if !hdr.Fresh {
		if st.mem, err = wasm.UnmarshalState(hdr.ImageKey, memBytes); err != nil {
			return nil, err
		}
	} else if len(memBytes) != 0 {
		return nil, errSaved("a fresh session with memory pages")
	}
	if err := json.Unmarshal(ovBytes, st.overlay); err != nil {
		return nil, errSaved("overlay: %v", err)
	}
	if st.bytes() > max {
		return nil, errSaved("state of %d bytes is past the limit of %d", st.bytes(), max)
	}
	// The overlay must fit a workspace of this sandbox's limits.
	ws, err := workspace.New(workspace.Config{MaxFileBytes: s.cfg.Workspace.MaxFileBytes,
		MaxOverlayBytes: s.cfg.Workspace.MaxOverlayBytes, MaxFiles: s.cfg.Workspace.MaxFiles})
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	if err := ws.Restore(st.overlay); err != nil {
		return nil, errSaved("overlay: %v", err)
	}
	if got := st.Hash(hdr.ImageKey); got != hdr.StateHash {
		return nil, errSaved("the state does not match its hash")
	}
	return st, nil
}
