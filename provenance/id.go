package provenance

import (
	"crypto/rand"
	"fmt"
	"regexp"
)

var idRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// NewID returns a random (version 4) UUID, in lowercase: the id of a record,
// a session or a store's owner.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// ValidID reports whether s is an id as NewID makes them.
func ValidID(s string) bool { return idRE.MatchString(s) }
