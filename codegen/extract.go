package codegen

import (
	"strings"
)

// Extract returns the Python code in an LLM reply.
//
// Fenced blocks open with ``` or ~~~ (three or more, indented at most three
// spaces) and close with a line of at least as many of the same character;
// an unclosed block runs to the end of the reply (a truncated answer). The
// choice, in order:
//
//  1. the longest block tagged python (python, py, python3; ties: the first);
//  2. else the longest untagged block;
//  3. else, when the reply has no fence at all, the whole reply, trimmed;
//  4. else "" (only blocks in other languages: no Python to run).
//
// The longest rather than the first, because models that add a usage example
// or a sample of the output beside the program put the program in the
// biggest block; and not all blocks joined, because separate blocks are often
// alternatives. The prompts ask for exactly one block, so the choice rarely
// matters. A block's indentation (the fence's) is removed from its lines.
func Extract(reply string) string {
	return choose(fencedBlocks(reply), reply)
}

// ExtractWithTests splits a reply holding a function and its tests: the
// tests are the last block that defines a unittest.TestCase, the code is
// Extract's choice among the other blocks.
func ExtractWithTests(reply string) (code, tests string) {
	blocks := fencedBlocks(reply)
	for i := len(blocks) - 1; i >= 0; i-- {
		if b := blocks[i]; b.lang != "other" && strings.Contains(b.code, "TestCase") && len(blocks) > 1 {
			tests = b.code
			blocks = append(blocks[:i:i], blocks[i+1:]...)
			break
		}
	}
	return choose(blocks, reply), tests
}

// block is one fenced block: its language ("python", "" untagged, or
// "other") and its code.
type block struct{ lang, code string }

// fencedBlocks returns the reply's non-empty fenced blocks, in order; nil
// when the reply has no fence at all.
func fencedBlocks(reply string) []block {
	reply = strings.ReplaceAll(reply, "\r\n", "\n")
	lines := strings.Split(reply, "\n")
	blocks := []block(nil)
	for i := 0; i < len(lines); i++ {
		indent, char, n, info, ok := fenceOpen(lines[i])
		if !ok {
			continue
		}
		if blocks == nil {
			blocks = []block{}
		}
		var body []string
		j := i + 1
		for ; j < len(lines); j++ {
			if fenceClose(lines[j], char, n) {
				break
			}
			body = append(body, dedent(lines[j], indent))
		}
		i = j
		code := strings.TrimRight(strings.Join(body, "\n"), " \t\n") + "\n"
		if strings.TrimSpace(code) == "" {
			continue
		}
		lang := "other"
		switch strings.ToLower(firstWord(info)) {
		case "python", "py", "python3", "py3":
			lang = "python"
		case "":
			lang = ""
		}
		blocks = append(blocks, block{lang, code})
	}
	return blocks
}

// choose is Extract's choice among blocks (nil: the reply had no fence).
func choose(blocks []block, reply string) string {
	var python, untagged string
	for _, b := range blocks {
		switch {
		case b.lang == "python" && len(b.code) > len(python):
			python = b.code
		case b.lang == "" && len(b.code) > len(untagged):
			untagged = b.code
		}
	}
	switch {
	case python != "":
		return python
	case untagged != "":
		return untagged
	case blocks != nil:
		return ""
	}
	code := strings.TrimSpace(reply)
	if code == "" {
		return ""
	}
	return code + "\n"
}

// fenceOpen recognises an opening fence: up to three spaces, then three or
// more backticks or tildes, then an info string (no backticks after ```).
func fenceOpen(line string) (indent int, char byte, n int, info string, ok bool) {
	for indent < len(line) && indent < 4 && line[indent] == ' ' {
		indent++
	}
	if indent > 3 || indent >= len(line) || (line[indent] != '`' && line[indent] != '~') {
		return 0, 0, 0, "", false
	}
	char = line[indent]
	for indent+n < len(line) && line[indent+n] == char {
		n++
	}
	if n < 3 {
		return 0, 0, 0, "", false
	}
	info = strings.TrimSpace(line[indent+n:])
	if char == '`' && strings.Contains(info, "`") {
		return 0, 0, 0, "", false
	}
	return indent, char, n, info, true
}

// fenceClose recognises the closing fence of a block opened with n chars.
func fenceClose(line string, char byte, n int) bool {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 {
		return false
	}
	s = strings.TrimRight(s, " \t")
	if len(s) < n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] != char {
			return false
		}
	}
	return true
}

// dedent removes up to n leading spaces.
func dedent(line string, n int) string {
	i := 0
	for i < n && i < len(line) && line[i] == ' ' {
		i++
	}
	return line[i:]
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		// also the "{.python}" and "python{title=...}" styles
		w := strings.TrimLeft(f[0], "{.")
		if i := strings.IndexAny(w, "{}"); i >= 0 {
			w = w[:i]
		}
		return w
	}
	return ""
}
