// Package petrinet turns a place/transition net whose transitions run Python
// into a runnable artifact. Nets are read from YAML (Parse, every problem
// named with its element and line), their inscriptions and guards checked in
// the sandbox with codegen's validator (Check), and built into plain Python
// files (Build): one module per transition and an entrypoint that fires
// enabled transitions until none is enabled or a step limit is hit. Run does
// all of it in the sandbox and reports the final marking:
//
//	net, err := petrinet.Parse(yamlBytes)
//	run, err := net.Run(ctx, sb, petrinet.RunOptions{})
//	fmt.Println(run.Marking) // map[end:1 start:0]
package petrinet
