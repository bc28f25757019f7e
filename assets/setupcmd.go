package assets

import "runtime/debug"

// modulePath is wasmpy's Go module.
const modulePath = "github.com/wasmpy/wasmpy"

// SetupCommand is the one command that installs the interpreters for the
// program calling it:
//   - in wasmpy's own module (its CLI, its tests): `wasmpy setup`;
//   - in an embedder's module that requires a released wasmpy:
//     `go run github.com/wasmpy/wasmpy/cmd/wasmpy@VERSION setup`, which
//     needs nothing of the embedder's go.sum;
//   - in one that replaces wasmpy with a checkout (or a pseudo-version with
//     no build info): the same with -mod=mod and no version, run in the
//     embedder's module, so that the replacement is what runs.
func SetupCommand() string {
	info, ok := debug.ReadBuildInfo()
	return setupCommand(info, ok)
}

func setupCommand(info *debug.BuildInfo, ok bool) string {
	const cmd = modulePath + "/cmd/wasmpy"
	if !ok {
		return "go run " + cmd + "@latest setup"
	}
	if info.Main.Path == modulePath {
		return "wasmpy setup"
	}
	for _, d := range info.Deps {
		if d.Path != modulePath {
			continue
		}
		if d.Replace != nil || d.Version == "" || d.Version == "(devel)" {
			return "go run -mod=mod " + cmd + " setup"
		}
		return "go run " + cmd + "@" + d.Version + " setup"
	}
	return "go run " + cmd + "@latest setup"
}
