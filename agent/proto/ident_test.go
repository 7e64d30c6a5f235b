package proto

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestParseStatStartTicks(t *testing.T) {
	for _, tc := range []struct {
		name string
		stat string
		want uint64
		ok   bool
	}{
		// A real line (Linux 6.x, `sleep 300`).
		{"sleep", "4242 (sleep) S 4200 4242 4200 34816 4242 4194304 95 0 0 0 0 0 0 0 20 0 1 0 1234567 5779456 256 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0", 1234567, true},
		{"name with spaces and parens", "7 (a) b (c) S 1 7 7 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0", 99, true},
		{"short", "7 (x) S 1 7 7 0", 0, false},
		{"no paren", "7 x S 1 7 7 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0", 0, false},
		{"not a number", "7 (x) S 1 7 7 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 -5 0 0", 0, false},
		{"empty", "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseStatStartTicks([]byte(tc.stat))
			if got != tc.want || ok != tc.ok {
				t.Errorf("= %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestParseStatStartTicksSelf checks the parser against this process's own
// stat, split independently (by field count from the start, this test's
// command name having no spaces).
func TestParseStatStartTicksSelf(t *testing.T) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip("no /proc")
	}
	f := bytes.Fields(b)
	if bytes.ContainsAny(f[1], " ") || len(f) < 22 {
		t.Skipf("unexpected stat %q", b)
	}
	want, _ := strconv.ParseUint(string(f[21]), 10, 64)
	got, ok := ParseStatStartTicks(b)
	if !ok || got != want {
		t.Errorf("ParseStatStartTicks(/proc/self/stat) = %d, %v; want %d", got, ok, want)
	}
}

// FuzzParseStatStartTicks: whatever the command name holds, the start time
// comes from the fields after it: a name with ')' and digits in it never
// changes the answer.
func FuzzParseStatStartTicks(f *testing.F) {
	f.Add("sleep", uint64(1234567))
	f.Add("a) 1 2 3 (b", uint64(99))
	f.Fuzz(func(t *testing.T, comm string, ticks uint64) {
		stat := fmt.Sprintf("42 (%s) S 1 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0 0", comm, ticks)
		got, ok := ParseStatStartTicks([]byte(stat))
		if ticks == 0 {
			if ok {
				t.Fatalf("start 0 accepted: %q", stat)
			}
			return
		}
		if !ok || got != ticks {
			t.Fatalf("ParseStatStartTicks(%q) = %d, %v; want %d", stat, got, ok, ticks)
		}
	})
}

// TestReplyChecks: the answers rpc.Invoke refuses (SECURITY 126) and the
// honest ones it takes.
func TestReplyChecks(t *testing.T) {
	long := strings.Repeat("a", 5000)
	tests := []struct {
		name string
		c    interface{ Check() error }
		ok   bool
	}{
		{"boot id of the kernel", ProcIdentity{StartTicks: 1, BootID: "8c1d7f43-6b0e-4d35-9a5e-0f2b7c9d1e23"}, true},
		{"no boot id (an older agent)", ProcIdentity{}, true},
		{"boot id of megabytes", ProcIdentity{BootID: strings.Repeat("9", 1<<20)}, false},
		{"boot id not a uuid", ProcIdentity{BootID: "8c1d7f43-6b0e-4d35-9a5e-0f2b7c9d1e2x"}, false},
		{"boot id with a newline", ProcIdentity{BootID: "8c1d7f43-6b0e-4d35-9a5e-0f2b7c9d1e2\n"}, false},
		{"proc started carries it", ProcStarted{ProcIdentity: ProcIdentity{BootID: long}}, false},
		{"capture started carries it", CaptureStarted{ProcIdentity: ProcIdentity{BootID: long}}, false},
		{"impair as tc says it", ImpairResult{Netdev: "eth1", Qdisc: "netem", Handle: "8001:", Netem: "delay 10ms loss 1%"}, true},
		{"impair netem of megabytes", ImpairResult{Qdisc: "netem", Netem: strings.Repeat("x", 1<<20)}, false},
		{"impair netdev no netdev", ImpairResult{Netdev: long}, false},
		{"impair gso as the agent says it", ImpairResult{Qdisc: "netem", Netem: "loss 1%", GSO: "gso_max_segs 1 (was 65535): each packet on its own while netem decides per packet"}, true},
		{"impair gso of megabytes", ImpairResult{Qdisc: "netem", GSO: strings.Repeat("x", 1<<20)}, false},
		{"capture ring", CaptureResult{Files: []FileInfo{{Path: "cap.pcap"}, {Path: "cap.pcap1"}}}, true},
		{"capture of 100,000 files", CaptureResult{Files: make([]FileInfo, 100_000)}, false},
		{"capture file name of megabytes", CaptureResult{Files: []FileInfo{{Path: long}}}, false},
		{"counters honest", Counters{Values: make([]CounterValue, 300)}, true},
		{"counters past the bound", Counters{Values: make([]CounterValue, MaxCounters+1)}, false},
		{"counter reason of megabytes", Counters{Unreadable: []CounterUnreadable{{Reason: strings.Repeat("r", 1<<20)}}}, false},
		{"facts work dir a path", Facts{WorkDir: "/home/u/.cache/rlab/runs/r/h"}, true},
		{"facts work dir of megabytes", Facts{WorkDir: "/" + strings.Repeat("a", 1<<20)}, false},
		{"facts kernel as uname -r says it", Facts{Kernel: "6.1.0-28-amd64"}, true},
		{"facts kernel of the utsname's 64 bytes", Facts{Kernel: strings.Repeat("6", 64)}, true},
		{"facts kernel of megabytes", Facts{Kernel: "6.1.0-" + strings.Repeat("k", 7<<20)}, false},
		{"facts kernel past utsname's 64 bytes", Facts{Kernel: strings.Repeat("6", 65)}, false},
		{"facts netdevs as the kernel names them", Facts{Netdevs: []Netdev{{Name: "lo"}, {Name: "enp129s0f1np1"}, {Name: strings.Repeat("e", 15)}}}, true},
		{"facts netdev name of megabytes", Facts{Netdevs: []Netdev{{Name: "lo"}, {Name: "eth" + strings.Repeat("n", 7<<20), Addrs: []string{"127.0.0.1/8"}}}}, false},
		{"facts netdev name past IFNAMSIZ", Facts{Netdevs: []Netdev{{Name: strings.Repeat("e", 16)}}}, false},
		{"proc result killed", ProcResult{ExitCode: -1, Signal: "killed"}, true},
		{"proc result signal of megabytes", ProcResult{ExitCode: -1, Signal: strings.Repeat("k", 1<<20)}, false},
		{"facts tool versions", Facts{Tools: map[string]Tool{"ib_write_bw": {Path: "/usr/bin/ib_write_bw", Version: "6.22"}, "gcc": {Path: "/usr/bin/gcc", Version: "12.2.0"}}}, true},
		{"facts tool version of megabytes", Facts{Tools: map[string]Tool{"ib_write_bw": {Path: "/usr/bin/ib_write_bw", Version: strings.Repeat("6.", 1<<19)}}}, false},
		{"facts tool version past the bound", Facts{Tools: map[string]Tool{"gcc": {Version: strings.Repeat("1", MaxToolVersion+1)}}}, false},
		{"facts tool path of megabytes", Facts{Tools: map[string]Tool{"gcc": {Path: "/" + strings.Repeat("a", 1<<20)}}}, false},
		{"facts tool version with escapes", Facts{Tools: map[string]Tool{"ib_write_bw": {Version: "6.10\x1b]0;owned\x07"}}}, false},
		{"facts tool version not UTF-8", Facts{Tools: map[string]Tool{"ib_write_bw": {Version: "6.\xff"}}}, false},
	}
	for _, tt := range tests {
		if err := tt.c.Check(); (err == nil) != tt.ok {
			t.Errorf("%s: Check() = %v, want ok %v", tt.name, err, tt.ok)
		} else if err != nil && len(err.Error()) > 200 {
			t.Errorf("%s: an error of %d bytes quotes the host's text unbounded", tt.name, len(err.Error()))
		}
	}
}
