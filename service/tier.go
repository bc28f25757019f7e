package service

import (
	"net/http"

	"github.com/wasmpy/wasmpy/runs"
)

// CodeTierForbidden refuses a run in a tier more trusted than the caller's
// token may ask for (403).
const CodeTierForbidden = runs.CodeTierForbidden

// caller is who the request comes from, for the executor, which resolves
// tiers, limits, ownership and budgets from it: its token's fingerprint,
// maximum tier and role; the zero Caller on a service that asks for no
// token.
func caller(r *http.Request) runs.Caller {
	ri := info(r)
	c := runs.Caller{Owner: ri.owner}
	if t := ri.token; t != nil {
		c.MaxTier, c.Admin = t.MaxTier, t.Admin()
	}
	return c
}
