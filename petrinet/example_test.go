package petrinet_test

import (
	"fmt"

	"github.com/wasmpy/wasmpy/petrinet"
)

func ExampleParse() {
	net, err := petrinet.Parse([]byte(`
net:
  id: greeter
  places:
    - {id: start, tokens: 1}
    - {id: end}
  transitions:
    - {id: say, inscription: print("hello")}
  arcs:
    - {source: start, target: say}
    - {source: say, target: end}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	art, err := net.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range art.Files {
		fmt.Println(f.Path)
	}
	// Output:
	// main.py
	// transitions/say.py
}

func ExampleParse_errors() {
	_, err := petrinet.Parse([]byte(`
net:
  id: broken
  places:
    - {id: start, tokens: 1}
  transitions:
    - {id: go}
  arcs:
    - {source: strat, target: go}
`))
	fmt.Println(err)
	// Output: petrinet: line 9: arc 1 (strat -> go): unknown source "strat": no place or transition has this id (places: start; transitions: go)
}
