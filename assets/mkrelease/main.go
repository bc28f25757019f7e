// Command mkrelease is `make release`: it packs the interpreters `make`
// built into the user cache into one reproducible archive per variant
// (assets.WriteRelease), and prints each with its size and SHA-256.
//
//	go run ./assets/mkrelease [-cache-dir DIR] [-o dist]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/wasmpy/wasmpy/assets"
)

func main() {
	cache := flag.String("cache-dir", os.Getenv("WASMPY_CACHE_DIR"), "the cache the interpreters were built into (default: the user cache dir)")
	out := flag.String("o", "dist", "the directory to write the archives into")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "mkrelease: no arguments expected (flags: -cache-dir, -o)")
		os.Exit(2)
	}
	files, err := assets.WriteRelease(*cache, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, f := range files {
		fmt.Printf("%s  %10d bytes  sha256 %s  (%s interpreter)\n", f.Path, f.Size, f.SHA256, f.Variant)
	}
	fmt.Printf("publish these at %s (or any URL: WASMPY_RELEASE_URL, wasmpy setup --from)\n", assets.ReleaseURL())
}
