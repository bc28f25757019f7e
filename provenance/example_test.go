package provenance_test

import (
	"fmt"

	"github.com/wasmpy/wasmpy/provenance"
)

func ExampleCanonical() {
	c, _ := provenance.Canonical([]byte(`{ "b": [1.0, 2e1, "\u00e9"], "a": {"y": null, "x": true} }`))
	fmt.Println(string(c))
	// Output: {"a":{"x":true,"y":null},"b":[1,20,"é"]}
}

func ExampleHash() {
	h1, _ := provenance.Hash([]byte(`{"text": "hi", "max_sentences": 2}`))
	h2, _ := provenance.Hash([]byte("{\"max_sentences\":2.0,\n \"text\":\"hi\"}"))
	fmt.Println(h1 == h2)
	// Output: true
}
