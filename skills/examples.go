package skills

import (
	"embed"
	"io/fs"
)

//go:embed examples llm
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

// LLMExamples holds the built-in skills that need an LLM endpoint (the
// external_call flag): embed_text, the classic embeddings skill. They are
// under skills/llm in the source tree; with Examples, the four skills of
// the classic service.
func LLMExamples() fs.FS {
	sub, err := fs.Sub(examples, "llm")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return sub
}
