package service

import (
	"net/http"

	"github.com/wasmpy/wasmpy/skills"
)

// CodeTierForbidden refuses a run in a tier more trusted than the caller's
// token may ask for (403).
const CodeTierForbidden = skills.CodeTierForbidden

// caller is who the request comes from, for the executor, which resolves
// tiers, limits, ownership and budgets from it: its token's fingerprint,
// maximum tier and role; the zero Caller on a service that asks for no
// token.
func caller(r *http.Request) skills.Caller {
	ri := info(r)
	c := skills.Caller{Owner: ri.owner}
	if t := ri.token; t != nil {
		c.MaxTier, c.Admin = t.MaxTier, t.Admin()
	}
	return c
}
