package skills

import (
	"embed"
	"io/fs"
)

//go:embed examples
var examples embed.FS

// Examples holds the built-in example skills, text_summarize,
// extract_entities and compact_memory, as Load reads them; the same files are in the source
// tree under skills/examples.
func Examples() fs.FS {
	sub, err := fs.Sub(examples, "examples")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return sub
}
