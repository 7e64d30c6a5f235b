package results

import (
	"os"
	"strings"
	"testing"
)

// TestSummaryStack: summary.md says the trouble counters that moved beside
// the workload's result and under its table; folded in a <details> it
// lists the counters that moved, trouble apart from traffic, with host,
// device and unit, counts those that did not, and says which could not be
// read, were reset or are not on the device — none of them as a zero. `rlab
// show` folds the details to one line; --counters unfolds them.
func TestSummaryStack(t *testing.T) {
	ctr := func(metric, host, dev string, v float64) Sample {
		return Sample{Metric: metric, Value: v, Unit: CounterUnit(metric), Meta: Meta{Workload: "write_bw", Tool: "ib_write_bw",
			Hosts: []string{host}, Devices: []string{dev}, Extra: map[string]string{CounterExtra: "hw_counters"}}}
	}
	r := &Run{Lab: "t", Status: RunOK,
		Workloads: []Workload{{Name: "write_bw", Tool: "ib_write_bw", Status: StatusOK, CounterNotes: []CounterNote{
			{Host: "server", Device: "rxe_eth1", Source: "counters", Problem: NoteAbsent, Reason: "the device has no counters folder"},
			{Host: "client", Device: "rxe_eth1", Source: "hw_counters", Counter: "rcvd_seq_err", Problem: NoteUnreadable, Reason: "permission denied"},
			{Host: "client", Device: "rxe_eth1", Source: "hw_counters", Counter: "sent_pkts", Problem: NoteReset, Reason: "went from 9 to 2: reset or wrapped during the workload, no delta"},
		}}},
		Samples: []Sample{
			{Metric: "bw_avg", Value: 0.1, Unit: "Gb/s", Meta: Meta{Workload: "write_bw", Tool: "ib_write_bw", Size: 4096, Hosts: []string{"server", "client"}}},
			ctr("sent_pkts", "server", "rxe_eth1", 1500), ctr("rcvd_seq_err", "server", "rxe_eth1", 0), ctr("duplicate_request", "server", "rxe_eth1", 2),
		},
	}
	md := string(Summary(r, ""))
	for _, want := range []string{
		"| write_bw | ib_write_bw |  | ok | 4 KiB 0.1 Gb/s | duplicate_request 2 |",
		"Trouble counters that moved: duplicate_request 2.",
		"<details><summary>Kernel counters (after minus before the workload): 2 moved, 1 did not</summary>",
		"Trouble:\n\n| host | device | counter | delta |\n|---|---|---|---:|\n| server | rxe_eth1 | `duplicate_request` | 2 packets |\n\n",
		"Traffic:\n\n| host | device | counter | delta |\n|---|---|---|---:|\n| server | rxe_eth1 | `sent_pkts` | 1500 packets |\n\n",
		"Could not read:\n\n- client rxe_eth1 hw_counters/rcvd_seq_err: permission denied",
		"Reset or wrapped (no delta):\n\n- client rxe_eth1 hw_counters/sent_pkts: went from 9 to 2",
		"Not on the device:\n\n- server rxe_eth1 counters: the device has no counters folder",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "`rcvd_seq_err` | 0") {
		t.Errorf("a counter that did not move listed as moved:\n%s", md)
	}
	// junit.xml: one test case for the workload (none per counter), its
	// result and trouble counters in its output.
	x, err := JUnit(r)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(x); strings.Count(s, "<testcase ") != 1 || !strings.Contains(s, "result: 4 KiB 0.1 Gb/s&#xA;trouble counters: duplicate_request 2&#xA;") || strings.Contains(s, "sent_pkts") {
		t.Errorf("junit.xml:\n%s", s)
	}
	folded, unfolded := string(TerminalText([]byte(md))), string(TerminalTextUnfolded([]byte(md)))
	for _, tc := range []struct {
		text, want string
		has        bool
	}{
		{folded, "Kernel counters (after minus before the workload): 2 moved, 1 did not (rlab show --counters)\n", true},
		{folded, "Trouble counters that moved: duplicate_request 2.", true},
		{folded, "sent_pkts", false},
		{folded, "permission denied", false},
		{unfolded, "Kernel counters (after minus before the workload): 2 moved, 1 did not:\n", true},
		{unfolded, "server  rxe_eth1  sent_pkts  1500 packets", true},
		{unfolded, "details>", false},
	} {
		if strings.Contains(tc.text, tc.want) != tc.has {
			t.Errorf("rlab show: contains %q = %v, want %v:\n%s", tc.want, !tc.has, tc.has, tc.text)
		}
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| size |") && strings.Contains(line, "sent_pkts") {
			t.Errorf("counter among the measures' columns: %s", line)
		}
	}
}

// TestCountersDocumented: labs/README.md's counter table names every
// counter of the vocabulary, with its devices and kind, and no other.
func TestCountersDocumented(t *testing.T) {
	b, err := os.ReadFile("../../labs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "## Counters: what the stack saw")
	if !ok {
		t.Fatal("labs/README.md has no counters section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	documented := map[string]bool{}
	for _, line := range strings.Split(sec, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.Contains(cells[1], "`") {
			continue
		}
		devices, kind := strings.TrimSpace(cells[2]), strings.TrimSpace(cells[3])
		for _, f := range strings.Split(cells[1], ",") {
			name := strings.Trim(strings.TrimSpace(f), "`")
			documented[name] = true
			c, ok := CounterByName(name)
			if !ok {
				t.Errorf("labs/README.md documents %s, which the vocabulary lacks", name)
				continue
			}
			if c.Class != kind || !strings.HasPrefix(devices, strings.SplitN(c.Devices, ",", 2)[0]) {
				t.Errorf("%s: README says %s, %s; the vocabulary %s, %s", name, devices, kind, c.Devices, c.Class)
			}
		}
	}
	for _, c := range Counters {
		if !documented[c.Name] {
			t.Errorf("counter %s is not in labs/README.md's table", c.Name)
		}
	}
}

// TestSummaryStackCompact: a class lab's compact summary lists, per
// workload, the trouble counters that moved, and no traffic counter.
func TestSummaryStackCompact(t *testing.T) {
	r := &Run{Lab: "class", Status: RunOK}
	for i := 0; i < compactAt; i++ {
		name := "bw" + strings.Repeat("x", i)
		r.Workloads = append(r.Workloads, Workload{Name: name, Tool: "ib_write_bw", Status: StatusOK})
		for _, m := range []struct {
			metric string
			v      float64
		}{{"sent_pkts", 100}, {"rcvd_seq_err", float64(i % 2)}} {
			r.Samples = append(r.Samples, Sample{Metric: m.metric, Value: m.v, Unit: CounterUnit(m.metric), Meta: Meta{Workload: name, Tool: "ib_write_bw",
				Hosts: []string{"client"}, Devices: []string{"rxe_eth1"}, Extra: map[string]string{CounterExtra: "hw_counters"}}})
		}
	}
	md := string(Summary(r, ""))
	if !strings.Contains(md, "## What the stack saw") || !strings.Contains(md, "- bwx: client rxe_eth1 `rcvd_seq_err` 1") {
		t.Errorf("compact summary lacks the trouble counters:\n%s", md)
	}
	if strings.Contains(md, "- bw: ") || strings.Contains(md, "`sent_pkts`") {
		t.Errorf("compact summary lists a workload without trouble, or a traffic counter:\n%s", md)
	}
}
