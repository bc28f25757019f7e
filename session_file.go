package wasmpy

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"regexp"

	"github.com/wasmpy/wasmpy/internal/engine"
	"github.com/wasmpy/wasmpy/workspace"
)

// A saved session is:
//
//	magic "wasmpy-session\n" and a version byte
//	the header's length (uint32, little-endian) and the header (JSON)
//	the body, deflated: the memory state (engine.State's encoding) and the
//	  overlay (JSON), each after its length (uint64)
//	the seal of everything before it: its HMAC-SHA256 under the sandbox's
//	  Config.SessionKey, or with no key its SHA-256
//
// The header names what the session was made with, so that a sandbox with
// another interpreter, standard library, package sets or preload refuses
// it before reading the body.
//
// A saved delta (SaveDelta) has the same envelope under its own magic,
// "wasmpy-delta\n": its header also names the state it applies to (base)
// as well as the one it makes (state_hash), and its body holds the memory's
// delta (engine.State.MarshalDelta) and the overlay, left empty when the
// overlay did not change (same_overlay).
var (
	sessionMagic = []byte("wasmpy-session\n")
	deltaMagic   = []byte("wasmpy-delta\n")
)

const sessionVersion = 1

// savedHeader is a saved session's header.
type savedHeader struct {
	ID          string          `json:"id"`
	Turns       int             `json:"turns"`
	Interpreter InterpreterInfo `json:"interpreter"`
	Packages    []PackageSet    `json:"packages"`
	ImageKey    string          `json:"image_key"` // engine.Engine.Key
	StateHash   string          `json:"state_hash"`
	Fresh       bool            `json:"fresh,omitempty"` // no turn has changed the memory yet
	Base        string          `json:"base,omitempty"`  // a delta's: the state it applies to
	SameOverlay bool            `json:"same_overlay,omitempty"`
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
	var mem []byte
	if s.state.mem != nil {
		var err error
		if mem, err = s.state.mem.MarshalBinary(); err != nil {
			return err
		}
	}
	ov, err := json.Marshal(s.state.overlay)
	if err != nil {
		return err
	}
	return writeSaved(w, s.sb.cfg.SessionKey, sessionMagic, s.header(), mem, ov)
}

// SaveDelta writes what moves the session from the state whose hash is
// since to the one it holds now: the pages of memory that changed, and the
// overlay if it changed. since is the session's state before its last
// turn (SessionTurn.StateBefore), or its state now (an empty delta); a
// store that keeps a Save and the deltas after it writes per turn only
// what the turn changed. ApplyDelta reads it.
func (s *Session) SaveDelta(w io.Writer, since string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed != nil {
		return s.closed
	}
	key := s.sb.engine.Key()
	base := s.state
	if since != base.Hash(key) {
		if base = s.prev; base == nil || since != base.Hash(key) {
			return fmt.Errorf("wasmpy: session %s cannot save changes since state %.12s: it holds only its state before its last turn and its state now", s.id, since)
		}
	}
	hdr := s.header()
	hdr.Base = since
	var mem []byte
	if s.state.mem != nil {
		var err error
		if mem, err = s.sb.engine.MarshalDelta(s.state.mem, base.mem); err != nil {
			return err
		}
	}
	var ov []byte
	if hdr.SameOverlay = base.overlaySum() == s.state.overlaySum(); !hdr.SameOverlay {
		var err error
		if ov, err = json.Marshal(s.state.overlay); err != nil {
			return err
		}
	}
	return writeSaved(w, s.sb.cfg.SessionKey, deltaMagic, hdr, mem, ov)
}

// header is the session's saved header as it is now; s.mu is held.
func (s *Session) header() savedHeader {
	key := s.sb.engine.Key()
	return savedHeader{ID: s.id, Turns: s.turns, Interpreter: s.sb.Interpreter(), Packages: s.sb.Packages(),
		ImageKey: key, StateHash: s.state.Hash(key), Fresh: s.state.mem == nil}
}

// writeSaved writes the envelope: magic, version, header, the parts
// deflated, and the seal of it all under key.
func writeSaved(w io.Writer, key []byte, magic []byte, hdr savedHeader, parts ...[]byte) error {
	hj, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	h := sealer(key)
	out := io.MultiWriter(w, h)
	head := append(append(bytes.Clone(magic), sessionVersion), binary.LittleEndian.AppendUint32(nil, uint32(len(hj)))...)
	if _, err := out.Write(append(head, hj...)); err != nil {
		return err
	}
	zw, _ := flate.NewWriter(out, flate.BestSpeed)
	for _, part := range parts {
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

// ApplyDelta moves the session on by what SaveDelta wrote, made by this
// session or a copy of it (restored from the same Save, in this process or
// another). The delta must start from the state the session holds and end
// at the state it names; anything else (another session's, a stale or
// damaged delta) is refused with an error that says so, and the session
// stays as it was.
func (s *Session) ApplyDelta(r io.Reader) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed != nil {
		return s.closed
	}
	max := s.max
	raw, err := readSaved(r, max)
	if err != nil {
		return err
	}
	hdr, body, err := s.sb.checkSaved(raw, max, deltaMagic)
	if err != nil {
		return err
	}
	key := s.sb.engine.Key()
	switch {
	case hdr.ID != s.id:
		return errSaved("a delta of session %s, not of %s", hdr.ID, s.id)
	case hdr.Base != s.state.Hash(key):
		return errSaved("the delta applies to state %.12s, the session is at %.12s", hdr.Base, s.state.Hash(key))
	case hdr.Turns < s.turns:
		return errSaved("the delta goes back from turn %d to %d", s.turns, hdr.Turns)
	}
	memBytes, ovBytes, err := readParts(body, max)
	if err != nil {
		return err
	}
	st := &sessionState{overlay: s.state.overlay}
	switch {
	case hdr.Fresh && len(memBytes) != 0:
		return errSaved("a fresh session with memory pages")
	case !hdr.Fresh:
		if st.mem, err = s.sb.engine.ApplyDelta(s.state.mem, memBytes); err != nil {
			return err
		}
	}
	if !hdr.SameOverlay {
		if st.overlay, err = s.sb.decodeOverlay(ovBytes); err != nil {
			return err
		}
	} else if len(ovBytes) != 0 {
		return errSaved("an overlay marked unchanged")
	}
	if st.bytes() > max {
		return errSaved("state of %d bytes is past the limit of %d", st.bytes(), max)
	}
	if got := st.Hash(key); got != hdr.StateHash {
		return errSaved("the state does not match its hash")
	}
	if s.state.mem != nil {
		s.sb.engine.Forget(s.state.mem)
	}
	s.prev, s.state, s.turns = s.state, st, hdr.Turns
	return nil
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
	raw, err := readSaved(r, max)
	if err != nil {
		return nil, err
	}
	hdr, body, err := s.checkSaved(raw, max, sessionMagic)
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

// readSaved reads a saved session or delta of at most max bytes of state.
func readSaved(r io.Reader, max int64) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r, maxSaved(max)))
	if err != nil {
		return nil, fmt.Errorf("wasmpy: reading the saved session: %w", err)
	}
	return raw, nil
}

// maxSaved is the most bytes a saved session or delta of max bytes of
// state takes: the saved form is compressed, at worst a little larger.
func maxSaved(max int64) int64 { return max + max/16 + 1<<20 }

// MaxSavedBytes is the size past which RestoreSession and ApplyDelta
// refuse a saved session or delta under these limits: what a state of
// MaxStateBytes takes at worst, compressed.
func (l SessionLimits) MaxSavedBytes() int64 {
	return maxSaved(l.Or(DefaultSessionLimits()).MaxStateBytes)
}

// sealer is the hash that seals a saved session: HMAC-SHA256 under key,
// or with no key SHA-256, which catches damage but not a forger.
func sealer(key []byte) hash.Hash {
	if len(key) == 0 {
		return sha256.New()
	}
	return hmac.New(sha256.New, key)
}

// checkSeal checks the seal at the end of raw under the sandbox's key.
func (s *Sandbox) checkSeal(raw []byte) error {
	body, seal := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	h := sealer(s.cfg.SessionKey)
	h.Write(body)
	if hmac.Equal(h.Sum(nil), seal) {
		return nil
	}
	if len(s.cfg.SessionKey) == 0 {
		return errSaved("corrupt or truncated (checksum mismatch)")
	}
	if sum := sha256.Sum256(body); hmac.Equal(sum[:], seal) {
		return fmt.Errorf("%w: it carries a plain checksum, not a seal under this sandbox's session key (saved without one, or altered and re-checksummed)", ErrSessionSeal)
	}
	return fmt.Errorf("%w: sealed under another session key (another user's?), or corrupt or altered", ErrSessionSeal)
}

// checkSaved checks the envelope (of magic: a saved session or a delta)
// and the header, and returns the body.
func (s *Sandbox) checkSaved(raw []byte, max int64, magic []byte) (*savedHeader, []byte, error) {
	n := len(magic)
	if len(raw) < n+1 || !bytes.Equal(raw[:n], magic) {
		switch {
		case bytes.HasPrefix(raw, deltaMagic):
			return nil, nil, errSaved("a session delta, not a saved session: apply it to its session (Session.ApplyDelta)")
		case bytes.HasPrefix(raw, sessionMagic):
			return nil, nil, errSaved("a whole saved session, not a delta: restore it (Sandbox.RestoreSession)")
		}
		return nil, nil, errSaved("not a wasmpy saved session")
	}
	if v := raw[n]; v != sessionVersion {
		return nil, nil, errSaved("version %d, this wasmpy reads version %d", v, sessionVersion)
	}
	if int64(len(raw)) > maxSaved(max) {
		return nil, nil, errSaved("larger than the limit of %d bytes of state", max)
	}
	if len(raw) < n+1+4+sha256.Size {
		return nil, nil, errSaved("truncated")
	}
	if err := s.checkSeal(raw); err != nil {
		return nil, nil, err
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

// decodeBody inflates a saved session's body, within max bytes of state,
// and checks it: the memory's page table, the overlay's paths and limits,
// and the hash the header claims.
func (s *Sandbox) decodeBody(hdr *savedHeader, body []byte, max int64) (*sessionState, error) {
	memBytes, ovBytes, err := readParts(body, max)
	if err != nil {
		return nil, err
	}
	st := &sessionState{}
	if !hdr.Fresh {
		if st.mem, err = engine.UnmarshalState(hdr.ImageKey, memBytes); err != nil {
			return nil, err
		}
	} else if len(memBytes) != 0 {
		return nil, errSaved("a fresh session with memory pages")
	}
	if st.overlay, err = s.decodeOverlay(ovBytes); err != nil {
		return nil, err
	}
	if st.bytes() > max {
		return nil, errSaved("state of %d bytes is past the limit of %d", st.bytes(), max)
	}
	if got := st.Hash(hdr.ImageKey); got != hdr.StateHash {
		return nil, errSaved("the state does not match its hash")
	}
	return st, nil
}

// readParts inflates a body's two parts, the memory and the overlay, each
// within max bytes, and nothing after them.
func readParts(body []byte, max int64) (mem, overlay []byte, err error) {
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
	if mem, err = part("memory"); err != nil {
		return nil, nil, err
	}
	if overlay, err = part("overlay"); err != nil {
		return nil, nil, err
	}
	if n, _ := zr.Read(make([]byte, 1)); n > 0 {
		return nil, nil, errSaved("data after the overlay")
	}
	return mem, overlay, nil
}

// decodeOverlay decodes a saved overlay and checks that it fits a
// workspace of this sandbox's limits, with clean paths.
func (s *Sandbox) decodeOverlay(b []byte) (*workspace.Overlay, error) {
	ov := &workspace.Overlay{}
	if err := json.Unmarshal(b, ov); err != nil {
		return nil, errSaved("overlay: %v", err)
	}
	ws, err := workspace.New(workspace.Config{MaxFileBytes: s.cfg.Workspace.MaxFileBytes,
		MaxOverlayBytes: s.cfg.Workspace.MaxOverlayBytes, MaxFiles: s.cfg.Workspace.MaxFiles})
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	if err := ws.Restore(ov); err != nil {
		return nil, errSaved("overlay: %v", err)
	}
	return ov, nil
}
