// Package console is how a run meets a terminal, as `wasmpy exec` shows it
// whether the run is in-process or in the resident (../resident): the
// run's stdout and stderr passed on in the order written (Streams), the
// line editor when stdin and stdout are a terminal (Terminal, and the guest
// REPL's prompts through it), Ctrl-C and SIGTERM as python3 takes them
// (Run), and text from a guest or a request made safe to print (Clean,
// CleanText, WriteIndented).
package console
