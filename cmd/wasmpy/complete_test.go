package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Tab completes at the REPL's prompt, as python3's does with readline and
// rlcompleter: the guest's names, builtins, keywords and attributes; what
// the candidates share is typed in, several are listed.
func TestREPLTabCompletion(t *testing.T) {
	s := startSession(t, "exec")
	s.expect(">>> ")
	s.send("import os\r")
	s.expect(">>> ")
	s.send("alpha_value = 41\r")
	s.expect(">>> ")
	s.send("print(alpha_v\t") // a global of the session
	s.send(" + 1)\r")
	s.expect("42\r\n")
	s.expect(">>> ")
	s.send("os.path.joi\t") // an attribute: os.path.join(
	s.send("'a', 'b')\r")
	s.expect("'a/b'\r\n")
	s.expect(">>> ")
	s.send("os.pa\t") // several: listed, the line kept
	out := s.expect("os.pathsep")
	require.Contains(t, out, "os.pardir")
	require.Contains(t, out, "os.path")
	s.send("thsep\r")
	s.expect("':'\r\n")
	s.expect(">>> ")
	s.send("for_each = 3\r")
	s.expect(">>> ")
	s.send("fo\t") // a keyword and a name: "for" shared, typed in
	s.send("_each * 2\r")
	s.expect("6\r\n")
	s.expect(">>> ")
	s.send("\x04")
	require.Equal(t, 0, s.exit())
}

// Tab in a script's own input() is a character of the line, as before,
// not a completion: only the REPL's prompts complete.
func TestTabInInputIsNotCompletion(t *testing.T) {
	s := startSession(t, "exec", "-c", "x = input('>>> ')\nprint(repr(x))")
	s.expect(">>> ")
	s.send("a\tb\r")
	s.expect(`'a\tb'`)
	require.Equal(t, 0, s.exit())
}
