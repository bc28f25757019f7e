package provenance

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Token is a bearer token: the token itself is never stored, only the hex
// SHA-256 of it (HashBytes), which requests are looked up by.
type Token struct {
	Name      string    `json:"name"`
	Hash      string    `json:"-"`
	Role      string    `json:"role"`       // RoleRunner or RoleAdmin: what the service lets it do
	MaxTier   string    `json:"max_tier"`   // the most trusted tier its runs may ask for (DefaultMaxTier unless set); "" for no maximum (a static token)
	CreatedAt time.Time `json:"created_at"` // zero: the store sets now
}

// The roles a Token may have.
const (
	// RoleRunner runs skills and code, and reads what the service lists.
	RoleRunner = "runner"
	// RoleAdmin does what a runner does, and registers, disables, enables
	// and deletes skill versions and reads their audit trail.
	RoleAdmin = "admin"
)

// DefaultMaxTier is a token's maximum trust tier when none is given: the
// strictest.
const DefaultMaxTier = "sandbox"

// tokenPrefix starts every token NewToken makes, so that one is easy to
// recognise (in a leaked file, a secret scanner) as wasmpy's.
const tokenPrefix = "wasmpy_"

var (
	tokenNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$`)
	tierNameRE  = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
)

// NewToken makes a token called name with a role and a maximum tier (""
// means DefaultMaxTier): the Token to store, which holds only the secret's
// hash, and the secret, to hand to its holder once.
func NewToken(name, role, maxTier string) (*Token, string, error) {
	if maxTier == "" {
		maxTier = DefaultMaxTier
	}
	t := &Token{Name: name, Role: role, MaxTier: maxTier}
	if err := t.Check(); err != nil {
		return nil, "", err
	}
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	secret := tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	t.Hash = HashBytes([]byte(secret))
	return t, secret, nil
}

// Check reports what is wrong with a token's name, role or maximum tier.
// A tier is checked for its form only: which tiers exist is the service's
// configuration.
func (t *Token) Check() error {
	var bad []string
	if !tokenNameRE.MatchString(t.Name) {
		bad = append(bad, fmt.Sprintf("name %q: want letters, digits, _ . @ or -, starting with a letter or digit, at most 64", t.Name))
	}
	if t.Role != RoleRunner && t.Role != RoleAdmin {
		bad = append(bad, fmt.Sprintf("role %q: want %s or %s", t.Role, RoleRunner, RoleAdmin))
	}
	if !tierNameRE.MatchString(t.MaxTier) {
		bad = append(bad, fmt.Sprintf("max tier %q: want a tier's name, e.g. sandbox, testing or trusted", t.MaxTier))
	}
	if len(bad) > 0 {
		return fmt.Errorf("provenance: token: %s", strings.Join(bad, "; "))
	}
	return nil
}

// Admin reports whether the token may change the registered skills.
func (t *Token) Admin() bool { return t.Role == RoleAdmin }
