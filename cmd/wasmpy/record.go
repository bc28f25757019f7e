package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/codegen"
	"github.com/wasmpy/wasmpy/petrinet"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
	"github.com/wasmpy/wasmpy/runs"
)

// recordFlag turns provenance on for one CLI run. The CLI records nothing
// by default: its user is the code's author, at a terminal, and a database
// written behind their back on every `exec` would surprise more than help.
// The service, which runs other people's code, records every run.
var recordFlag = &cli.BoolFlag{Name: "record", EnvVars: []string{"WASMPY_RECORD"},
	Usage: "keep a provenance record of the run (hashes, never payloads) in --db, as the service does for every run"}

// recording is the provenance record of one CLI run (--record): begun
// before the run, finished after, in the --db store. A nil *recording
// (no --record) records nothing.
type recording struct {
	st  stores.Store
	rec *provenance.Record
}

// startRecording, with --record, opens the store and begins a record of
// kind for a run on sb with limits: code is hashed as the code run (""
// when it is only known at the end, as generated code is), inputs as the
// inputs. Without --record it returns nil.
func startRecording(c *cli.Context, sb *wasmpy.Sandbox, kind, tier string, limits wasmpy.Limits, code string, inputs any) (*recording, error) {
	if !c.Bool("record") {
		return nil, nil
	}
	in, err := json.Marshal(inputs)
	if err != nil {
		return nil, &exitError{code: exitWasmpy, msg: fmt.Sprintf("--record: %v", err)}
	}
	inputsHash, err := provenance.Hash(in)
	if err != nil {
		return nil, &exitError{code: exitWasmpy, msg: fmt.Sprintf("--record: %v", err)}
	}
	st, err := openStore(c)
	if err != nil {
		return nil, err
	}
	rec := runs.NewRecord(sb, kind, limits)
	rec.ActorID, rec.ActorType, rec.Tier = os.Getenv("USER"), "cli", tier
	rec.InputsHash = inputsHash
	if code != "" {
		rec.CodeHash = provenance.HashBytes([]byte(code))
	}
	if err := st.Begin(c.Context, rec); err != nil {
		st.Close()
		return nil, &exitError{code: exitWasmpy, msg: "--record: " + console.OneLine(err)}
	}
	return &recording{st: st, rec: rec}, nil
}

// finish completes the record with how the run went and tells stderr its
// id.
func (r *recording) finish(c *cli.Context, res *wasmpy.Result, runErr error) error {
	if r == nil {
		return nil
	}
	runs.CompleteRecord(c.Context, r.rec, res, runErr)
	return r.save(c)
}

// finishCodegen completes the record of a generation (gen, def): the code
// it settled on, its quality outcome, and its last run. err is the
// generation's.
func (r *recording) finishCodegen(c *cli.Context, rep *codegen.Report, fr *codegen.FunctionReport, err error) error {
	if r == nil {
		return nil
	}
	if fr != nil {
		rep = &fr.Report
	}
	runs.CompleteCodegenRecord(c.Context, r.rec, rep, err)
	return r.save(c)
}

// finishNet completes the record of a net: checked (Validated) or not,
// and, for net run, its run (res; nil for net build). err is the command's.
func (r *recording) finishNet(c *cli.Context, res *wasmpy.Result, err error) error {
	if r == nil {
		return nil
	}
	var ne *petrinet.Error
	r.rec.Codegen = &provenance.Codegen{Validated: !errors.As(err, &ne)}
	switch {
	case res != nil:
		runs.CompleteRecord(c.Context, r.rec, res, nil)
	case err == nil:
		r.end(provenance.OutcomeOK, "")
	case ne != nil:
		r.end(codegen.OutcomeInvalid, fmt.Sprintf("%d problems", len(ne.Problems)))
	default:
		runs.CompleteRecord(c.Context, r.rec, nil, err)
	}
	return r.save(c)
}

// end sets an outcome that is not a run's.
func (r *recording) end(outcome, why string) {
	done := time.Now().UTC().Truncate(time.Microsecond)
	r.rec.FinishedAt, r.rec.Outcome, r.rec.Error = &done, outcome, why
}

func (r *recording) save(c *cli.Context) error {
	if err := r.st.Finish(context.WithoutCancel(c.Context), r.rec); err != nil {
		return &exitError{code: exitWasmpy, msg: "--record: " + console.OneLine(err)}
	}
	fmt.Fprintf(c.App.ErrWriter, "wasmpy: provenance: %s\n", r.rec.ExecutionID)
	return nil
}

// close releases the store. A record begun and never finished (the command
// failed before its run ended) stays running until a recovery marks it
// interrupted.
func (r *recording) close() {
	if r != nil {
		r.st.Close()
	}
}
