package wasmpy

import (
	"context"

	"github.com/wasmpy/wasmpy/assets"
)

// Install downloads the interpreters this version of wasmpy pins (the
// default build and sci, with numpy) and installs them into the user cache
// dir, where New finds them: source is a release base URL (http or https)
// or a local directory holding what `make release` wrote; "" means the
// project's release ($WASMPY_RELEASE_URL overrides it). Every file is
// checked against the SHA-256s of the lock compiled into this package
// before anything is installed, and on an error nothing is. Interpreters
// already installed as the lock pins them are not fetched again. For
// another cache dir, or to show progress, call assets.Install.
//
//	if err := wasmpy.Install(ctx, ""); err != nil { ... }
//	sb, err := wasmpy.New(ctx, wasmpy.Config{})
func Install(ctx context.Context, source string) error {
	_, err := assets.Install(ctx, assets.InstallOptions{Source: source})
	return err
}
