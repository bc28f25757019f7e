package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// The deployment files cannot run here (no container engine, no cluster);
// this checks what can be checked: every manifest parses, the pieces refer
// to each other by the right names, the probes hit the service's health
// routes on its port, and every flag the Dockerfile and the Deployment
// pass to wasmpy serve is one it has.
func TestDeployManifests(t *testing.T) {
	docs := map[string]map[string]any{} // kind/name → document
	files, err := filepath.Glob("../../deploy/k8s/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var doc map[string]any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, f)
			require.NotEmpty(t, doc["apiVersion"], f)
			meta := doc["metadata"].(map[string]any)
			docs[doc["kind"].(string)+"/"+meta["name"].(string)] = doc
		}
	}
	for _, want := range []string{"Deployment/wasmpy", "Service/wasmpy", "Secret/wasmpy", "HorizontalPodAutoscaler/wasmpy", "PodDisruptionBudget/wasmpy"} {
		require.Contains(t, docs, want)
	}
	get := func(v any, path ...any) any {
		for _, p := range path {
			switch k := p.(type) {
			case string:
				v = v.(map[string]any)[k]
			case int:
				v = v.([]any)[k]
			}
			require.NotNil(t, v, "%v", path)
		}
		return v
	}
	dep := docs["Deployment/wasmpy"]
	pod := get(dep, "spec", "template")
	labels := get(pod, "metadata", "labels")
	require.Equal(t, get(dep, "spec", "selector", "matchLabels"), labels)
	require.Equal(t, get(docs["Service/wasmpy"], "spec", "selector"), labels)
	require.Equal(t, "wasmpy", get(docs["HorizontalPodAutoscaler/wasmpy"], "spec", "scaleTargetRef", "name"))
	require.Equal(t, "cpu", get(docs["HorizontalPodAutoscaler/wasmpy"], "spec", "metrics", 0, "resource", "name"))

	c := get(pod, "spec", "containers", 0)
	require.Equal(t, "/health/live", get(c, "livenessProbe", "httpGet", "path"))
	require.Equal(t, "/health/ready", get(c, "readinessProbe", "httpGet", "path"))
	require.Equal(t, "http", get(c, "ports", 0, "name"))
	require.Equal(t, 8002, get(c, "ports", 0, "containerPort"))
	for _, r := range []string{"cpu", "memory"} {
		require.NotEmpty(t, get(c, "resources", "limits", r))
		require.NotEmpty(t, get(c, "resources", "requests", r))
	}
	require.Equal(t, true, get(c, "securityContext", "readOnlyRootFilesystem"))
	require.Equal(t, true, get(pod, "spec", "securityContext", "runAsNonRoot"))

	// The secret's keys are the ones the pod reads.
	secret := get(docs["Secret/wasmpy"], "stringData").(map[string]any)
	ref := get(c, "env", 0, "valueFrom", "secretKeyRef")
	require.Equal(t, "WASMPY_DB", get(c, "env", 0, "name"))
	require.Contains(t, secret, get(ref, "key"))
	require.Contains(t, secret, get(pod, "spec", "volumes", 1, "secret", "items", 0, "key"))

	var args []string
	for _, a := range get(c, "args").([]any) {
		args = append(args, a.(string))
	}
	require.Equal(t, "serve", args[0])
	checkServeFlags(t, args[1:])
	require.Contains(t, args, "--addr=0.0.0.0:8002")

	// The Dockerfile: a build stage and a non-root runtime stage whose
	// command is serve with real flags.
	df, err := os.ReadFile("../../Dockerfile")
	require.NoError(t, err)
	require.Len(t, regexp.MustCompile(`(?m)^FROM `).FindAll(df, -1), 2, "multi-stage")
	require.Regexp(t, `(?m)^USER 10001`, string(df))
	cmd := regexp.MustCompile(`(?m)^CMD \[(.*)\]$`).FindSubmatch(df)
	require.NotNil(t, cmd)
	var cmdArgs []string
	for _, a := range strings.Split(string(cmd[1]), ",") {
		cmdArgs = append(cmdArgs, strings.Trim(strings.TrimSpace(a), `"`))
	}
	require.Equal(t, "serve", cmdArgs[0])
	checkServeFlags(t, cmdArgs[1:])
}

// checkServeFlags fails unless every --flag in args is a flag of serve.
func checkServeFlags(t *testing.T, args []string) {
	t.Helper()
	var names []string
	for _, f := range serveCommand().Flags {
		names = append(names, f.Names()...)
	}
	for _, a := range args {
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			require.True(t, slices.Contains(names, name), "wasmpy serve has no --%s", name)
		}
	}
}
