package run

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
)

// TestRunRecordsArtifacts: results.json's artifacts are what the fetch
// steps pulled, and equal what is on disk after a real in-process run:
// every file of hosts/*/captures/ and hosts/*/logs/ but the controller's
// own (agent.log, dmesg tails) is listed once, with its host, its kind
// (the folder it landed in) and, unless the mask rewrote it, its size and
// sha256 as the file on disk has them. In a lab with a sensitive value
// every log is masked as it is pulled and carries no size or sha256 (they
// were the host's), the workload's own own.pcap too (a log: no capture
// step made it); captures are never rewritten and keep theirs.
func TestRunRecordsArtifacts(t *testing.T) {
	for _, c := range []struct {
		name      string
		sensitive bool
	}{{"plain", false}, {"sensitive", true}} {
		t.Run(c.name, func(t *testing.T) { testRunRecordsArtifacts(t, c.sensitive) })
	}
}

func testRunRecordsArtifacts(t *testing.T, sensitive bool) {
	const secret = "s3cr3t-artifact-token"
	token, variable := `"visible-token"`, ""
	if sensitive {
		token, variable = "var.token", `
variable "token" {
  type      = string
  default   = "`+secret+`"
  sensitive = true
}`
	}
	capture := ""
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("tcpdump"); err == nil {
			capture = `
capture "all" {
  host   = host.a
  netdev = "lo"
  filter = "tcp"
}
`
		}
	}
	res, _ := runLab(t, `
lab "t" {}`+variable+`
host "a" { address = "127.0.0.1" }
host "b" { address = "127.0.0.1" }
workload "hello" {
  tool    = "exec"
  host    = host.a
  command = ["sh", "-c", "echo plain > plain.txt; echo token $0 > token.txt; echo not a capture > own.pcap", `+token+`]
}
workload "bulk" {
  tool   = "tcp"
  server = host.a
  client = host.b
  bytes  = "1MiB"
}
`+capture, Options{})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	doc := readRun(t, res.Dir)
	if len(doc.Artifacts) == 0 {
		t.Fatal("results.json lists no artifacts")
	}
	listed := map[string]results.Artifact{}
	for _, a := range doc.Artifacts {
		if _, dup := listed[a.Path]; dup {
			t.Errorf("artifact %s listed twice", a.Path)
		}
		listed[a.Path] = a
	}
	var onDisk []string
	for _, dir := range []string{"captures", "logs"} {
		files, _ := filepath.Glob(filepath.Join(res.Dir, "hosts", "*", dir, "*"))
		for _, f := range files {
			rel, _ := filepath.Rel(res.Dir, f)
			rel = filepath.ToSlash(rel)
			if b := filepath.Base(f); b == "agent.log" || strings.HasPrefix(b, "dmesg.") {
				continue // the controller's own record, not pulled
			}
			onDisk = append(onDisk, rel)
		}
	}
	var paths []string
	for p := range listed {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	slices.Sort(onDisk)
	if !slices.Equal(paths, onDisk) {
		t.Errorf("artifacts:\n%q\nfiles pulled on disk:\n%q", paths, onDisk)
	}
	var captures, logs, tokens, ownPcap int
	for p, a := range listed {
		parts := strings.Split(p, "/")
		if len(parts) != 4 || parts[0] != "hosts" {
			t.Errorf("artifact %s: not hosts/<slug>/<folder>/<file>", p)
			continue
		}
		if a.Host != parts[1] { // the hosts' slugs are their names here
			t.Errorf("artifact %s: host %q", p, a.Host)
		}
		want := map[string]string{"captures": results.ArtifactCapture, "logs": results.ArtifactLog}[parts[2]]
		if a.Type != want {
			t.Errorf("artifact %s: kind %q, want %q", p, a.Type, want)
		}
		if a.Type == results.ArtifactCapture {
			captures++
		}
		data, err := os.ReadFile(filepath.Join(res.Dir, filepath.FromSlash(p)))
		if err != nil {
			t.Errorf("artifact %s: %v", p, err)
			continue
		}
		if strings.HasSuffix(p, "/own.pcap") {
			// A capture is what a capture step makes, not a name: the
			// workload's own .pcap is one of its logs, masked as they
			// are.
			ownPcap++
			if a.Type != results.ArtifactLog || p != "hosts/a/logs/own.pcap" {
				t.Errorf("the workload's own.pcap is %s, kind %q: want hosts/a/logs/own.pcap, a log", p, a.Type)
			}
		}
		if strings.HasSuffix(p, "/token.txt") {
			tokens++ // (the harness's Pull does not mask: sensitive_name_netns_test checks real pulls do)
		}
		if a.Type == results.ArtifactLog {
			logs++
			if sensitive {
				if a.Size != 0 || a.SHA256 != "" {
					t.Errorf("masked log %s: size %d sha256 %q, want none (the host's were of the unmasked file)", p, a.Size, a.SHA256)
				}
				continue
			}
		}
		sum := sha256.Sum256(data)
		if a.Type == results.ArtifactCapture && a.SHA256 == "" && a.Size == int64(len(data)) {
			continue // a capture may be hashed only as it is sent
		}
		if a.Size != int64(len(data)) || a.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("artifact %s: size %d sha256 %s; on disk %d bytes, sha256 %x", p, a.Size, a.SHA256, len(data), sum)
		}
	}
	if ownPcap != 1 {
		t.Errorf("the workload's own.pcap listed %d times, want once", ownPcap)
	}
	if tokens != 1 || logs < 3 {
		t.Errorf("the exec workload's token.txt listed %d times (want once), %d logs (want its outputs and the tcp ends')", tokens, logs)
	}
	if capture != "" && captures == 0 {
		t.Error("the capture's files are not among the artifacts")
	}
	if capture == "" {
		t.Log("no capture taken (needs root and tcpdump): logs only")
	}
}

// artifactsOnDisk checks every artifact of doc is a file of dir with the
// size and (when listed) sha256 it records, and returns the paths of the
// captures among them.
func artifactsOnDisk(t *testing.T, dir string, doc *results.Run) []string {
	t.Helper()
	var caps []string
	for _, a := range doc.Artifacts {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(a.Path)))
		if err != nil {
			t.Errorf("artifact %s: %v", a.Path, err)
			continue
		}
		sum := sha256.Sum256(data)
		if a.Size != 0 && a.Size != int64(len(data)) || a.SHA256 != "" && a.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("artifact %s: size %d sha256 %s; on disk %d bytes, sha256 %x", a.Path, a.Size, a.SHA256, len(data), sum)
		}
		if a.Type == results.ArtifactCapture {
			caps = append(caps, a.Path)
		}
	}
	return caps
}
