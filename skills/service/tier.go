package service

import (
	"errors"
	"net/http"
	"strings"

	"github.com/wasmpy/wasmpy/tiers"
)

// CodeTierForbidden refuses a run in a tier more trusted than the caller's
// token may ask for (403).
const CodeTierForbidden = "tier_forbidden"

// maxTier is the most trusted tier the request's token may ask for; ""
// for no maximum (a service that asks for no token).
func maxTier(r *http.Request) string {
	if t := tokenOf(r); t != nil {
		return t.MaxTier
	}
	return ""
}

// tierFor is the tier of a request that asked for asked: resolve(asked);
// or, when it asked for none and the default is above its token's maximum
// tier, resolve(the maximum). A tier above the maximum is refused (403).
func (s *Service) tierFor(r *http.Request, asked string, resolve func(string) (*tiers.Tier, error)) (*tiers.Tier, error) {
	t, err := resolve(asked)
	if err != nil {
		return nil, err
	}
	err = s.allowTier(r, t)
	if max := maxTier(r); err != nil && asked == "" && max != "" {
		if capped, cerr := resolve(max); cerr == nil && s.allowTier(r, capped) == nil {
			return capped, nil
		}
	}
	return t, err
}

// allowTier refuses t when the request's token has a lower maximum tier.
func (s *Service) allowTier(r *http.Request, t *tiers.Tier) error {
	max := maxTier(r)
	err := s.cfg.Executor.Tiers().Within(t.Name, max)
	switch {
	case errors.Is(err, tiers.ErrAboveMax):
		return fail(CodeTierForbidden, "tier %q is above this token's maximum tier %q: ask for %s or a stricter tier, or use a token allowed more",
			t.Name, max, max)
	case err != nil: // the token names a tier this service lacks: it may use the strictest only
		if s.cfg.Executor.Tiers().Within(t.Name, s.cfg.Executor.Tiers().Strictest().Name) != nil {
			return fail(CodeTierForbidden, "this token's maximum tier %q is not one of this service's (%s): it may use the strictest only",
				max, strings.Join(s.cfg.Executor.Tiers().Names(), ", "))
		}
	}
	return nil
}
