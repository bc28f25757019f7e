package runs

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/wasmpy/wasmpy/skills"
)

// Bounds on who a request says it comes from; provenance keeps both, and
// `wasmpy history` prints them to an operator's terminal.
const (
	MaxActorID   = 256 // bytes
	MaxActorType = 64  // bytes
)

// checkActor refuses an actor id or type that is too long or holds anything
// but printable characters and spaces: no control characters (an escape
// sequence, a newline forging a table row), no invisible format characters
// (bidirectional overrides), no invalid UTF-8.
func checkActor(id, typ string) error {
	for _, f := range []struct {
		name, value string
		max         int
	}{{"actor_id", id, MaxActorID}, {"actor_type", typ, MaxActorType}} {
		if len(f.value) > f.max {
			return &skills.Error{Code: CodeBadRequest, Message: fmt.Sprintf("%s: at most %d bytes, got %d", f.name, f.max, len(f.value))}
		}
		for i := 0; i < len(f.value); {
			r, n := utf8.DecodeRuneInString(f.value[i:])
			if r == utf8.RuneError && n == 1 {
				return &skills.Error{Code: CodeBadRequest, Message: fmt.Sprintf("%s: not valid UTF-8 at byte %d", f.name, i)}
			}
			if !unicode.IsGraphic(r) {
				return &skills.Error{Code: CodeBadRequest, Message: fmt.Sprintf("%s: only printable characters and spaces, got %q at byte %d", f.name, r, i)}
			}
			i += n
		}
	}
	return nil
}
