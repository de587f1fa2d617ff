// Package k8s holds the manifests that run xdssim sweeps on Kubernetes
// (docs/distributed-sweeps.md) and their test. It is a module of its own so
// that the simulator does not depend on the Kubernetes API.
package k8s

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// decode reads a manifest strictly into v: a field the Kubernetes type
// does not have, or a value of the wrong type, is an error, as
// `kubectl apply --validate=strict` would make it.
func decode(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// flagValue returns the value after flag in args, or "".
func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// TestSweepJobIsAnIndexedJobOfShards decodes sweep-job.yaml into the real
// batch/v1 Job and checks that it runs one shard per completion index:
// Indexed, `xdssim sweep ... --shard /N` with N its completions (the index
// comes from JOB_COMPLETION_INDEX), its output on the shared volume.
func TestSweepJobIsAnIndexedJobOfShards(t *testing.T) {
	var job batchv1.Job
	decode(t, "sweep-job.yaml", &job)
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		t.Errorf("apiVersion %q kind %q, want batch/v1 Job", job.APIVersion, job.Kind)
	}
	spec := job.Spec
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("completionMode %v, want Indexed: the shards take their index from JOB_COMPLETION_INDEX", spec.CompletionMode)
	}
	if spec.Completions == nil || *spec.Completions < 1 {
		t.Fatalf("completions %v, want the number of shards", spec.Completions)
	}
	pod := spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q, want Never (the Job retries a failed index)", pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	args := pod.Containers[0].Args
	if len(args) < 2 || args[0] != "sweep" {
		t.Fatalf("args %q, want xdssim sweep SCENARIO ...", args)
	}
	shard := flagValue(args, "--shard")
	if want := "/" + strconv.Itoa(int(*spec.Completions)); shard != want {
		t.Errorf("--shard %q, want %q: one shard per completion index, the index from JOB_COMPLETION_INDEX", shard, want)
	}
	checkResultsVolume(t, pod, flagValue(args, "--out"))
}

// TestMergeJobReadsTheSweepsShards: merge-job.yaml, decoded into the real
// Job type, merges the directory the sweep's shards write to, on the same
// claim, with the same image.
func TestMergeJobReadsTheSweepsShards(t *testing.T) {
	var sweep, merge batchv1.Job
	decode(t, "sweep-job.yaml", &sweep)
	decode(t, "merge-job.yaml", &merge)
	pod := merge.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	args := pod.Containers[0].Args
	out := flagValue(sweep.Spec.Template.Spec.Containers[0].Args, "--out")
	if len(args) < 2 || args[0] != "merge" || args[1] != out {
		t.Errorf("args %q, want merge %s", args, out)
	}
	if a, b := pod.Containers[0].Image, sweep.Spec.Template.Spec.Containers[0].Image; a != b {
		t.Errorf("image %q, the sweep's is %q", a, b)
	}
	checkResultsVolume(t, pod, args[1])
}

// checkResultsVolume checks that dir is under a mount of the claim
// results-pvc.yaml makes, and that the claim can be mounted by every
// shard at once.
func checkResultsVolume(t *testing.T, pod corev1.PodSpec, dir string) {
	t.Helper()
	var pvc corev1.PersistentVolumeClaim
	decode(t, "results-pvc.yaml", &pvc)
	if !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("the results claim's access modes %v lack ReadWriteMany: the shards run on several nodes", pvc.Spec.AccessModes)
	}
	volumes := map[string]string{}
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil {
			volumes[v.Name] = v.PersistentVolumeClaim.ClaimName
		}
	}
	for _, m := range pod.Containers[0].VolumeMounts {
		if volumes[m.Name] == pvc.Name && strings.HasPrefix(dir, strings.TrimSuffix(m.MountPath, "/")+"/") {
			return
		}
	}
	t.Errorf("%s is on no mount of the claim %s", dir, pvc.Name)
}

// TestDockerfileBuildsTheCLIWithTheModulesGo: the image builds
// ./cmd/xdssim with the Go release go.mod asks for.
func TestDockerfileBuildsTheCLIWithTheModulesGo(t *testing.T) {
	df, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	got := regexp.MustCompile(`(?m)^FROM golang:(\d+\.\d+)`).FindSubmatch(df)
	if want == nil || got == nil || string(got[1]) != string(want[1]) {
		t.Errorf("the Dockerfile builds with golang:%s, go.mod asks for go %s", got, want)
	}
	if !strings.Contains(string(df), "go build -trimpath -o /out/xdssim ./cmd/xdssim") {
		t.Error("the Dockerfile does not build ./cmd/xdssim")
	}
	if _, err := os.Stat("../../cmd/xdssim/main.go"); err != nil {
		t.Errorf("the Dockerfile builds ./cmd/xdssim: %v", err)
	}
}
