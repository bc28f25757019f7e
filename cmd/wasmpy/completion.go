package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// Shell completion: the shell asks wasmpy itself (the hidden
// --generate-bash-completion flag) for the commands and flags that fit.
var completionScripts = map[string]string{
	"bash": `_wasmpy() {
  local cur opts
  cur="${COMP_WORDS[COMP_CWORD]}"
  if [[ "$cur" == -* ]]; then
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  [ ${#COMPREPLY[@]} -eq 0 ] && COMPREPLY=($(compgen -f -- "$cur"))
  return 0
}
complete -o default -F _wasmpy wasmpy
`,
	"zsh": `#compdef wasmpy
_wasmpy() {
  local -a opts
  local cur=${words[-1]}
  if [[ "$cur" == -* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} "$cur" --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ -n "${opts[1]}" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _wasmpy wasmpy
`,
}

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash or zsh)",
		ArgsUsage: "bash|zsh",
		Description: "Enable it with:\n" +
			"  bash: source <(wasmpy completion bash)      (or save it in /etc/bash_completion.d/)\n" +
			"  zsh:  source <(wasmpy completion zsh)",
		Action: func(c *cli.Context) error {
			script, ok := completionScripts[c.Args().First()]
			if c.NArg() != 1 || !ok {
				return usageErr("completion: want one shell: bash or zsh")
			}
			fmt.Fprint(c.App.Writer, script)
			return nil
		},
	}
}
