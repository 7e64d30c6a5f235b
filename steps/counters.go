package steps

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
)

// The kernel's counters around a workload: read on each of its hosts before
// and after it (one counters.read call per host each time, the hosts at
// once), the differences become samples named by the kernel's counter names
// (results/counters.go). What could not be read is said, never zero.

// CounterSide is what to read on one host around a workload.
type CounterSide struct {
	Host    string
	RDMA    []string // RDMA devices
	Netdevs []string // their netdevs
	Route   string   // tcp: the data address, whose netdev the agent finds
}

// CounterSides are the hosts and devices of w whose counters are read: for
// RDMA tools each end's rxe device and its netdev, for tcp the netdev each
// end reaches the data address by; none for exec.
func CounterSides(env *Env, w *Workload) []CounterSide {
	t, ok := kinds.Lookup(w.Tool)
	if !ok || t.OneHost {
		return nil
	}
	var sides []CounterSide
	add := func(s CounterSide) {
		for i := range sides {
			if sides[i].Host == s.Host { // both ends on one host: read once
				sides[i].RDMA = append(sides[i].RDMA, s.RDMA...)
				sides[i].Netdevs = append(sides[i].Netdevs, s.Netdevs...)
				return
			}
		}
		sides = append(sides, s)
	}
	if t.RDMA {
		for _, e := range [][2]string{{w.ServerHost, w.ServerDevice}, {w.ClientHost, w.ClientDevice}} {
			if e[0] == "" || e[1] == "" {
				continue
			}
			s := CounterSide{Host: e[0]}
			if info, err := env.Device(e[1]); err == nil {
				s.RDMA = []string{info.Name}
				if info.Netdev != "" {
					s.Netdevs = []string{info.Netdev}
				}
			}
			add(s)
		}
		return sides
	}
	// The address the tcp client dials, by the tcp op's own rule (the
	// IPv4 of the server's data rxe netdev first): each end reads the
	// netdev its route to that address takes.
	addr, err := DialAddr(env, w)
	if err != nil {
		addr = w.ServerAddr
		if addr == "" {
			addr = w.ServerHost
		}
	}
	for _, h := range []string{w.ServerHost, w.ClientHost} {
		if h != "" {
			add(CounterSide{Host: h, Route: addr})
		}
	}
	return sides
}

// CounterReading is one host's reading, or why there is none.
type CounterReading struct {
	Host string
	C    *proto.Counters
	Err  error
}

// ReadCounters reads every side at once, one call per host.
func ReadCounters(ctx context.Context, env *Env, sides []CounterSide) []CounterReading {
	out := make([]CounterReading, len(sides))
	var wg sync.WaitGroup
	for i, s := range sides {
		out[i].Host = s.Host
		h, err := env.Host(s.Host)
		if err != nil {
			out[i].Err = err
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := rpc.Invoke(ctx, h, rpc.CountersRead, proto.CountersReadParams{RDMA: s.RDMA, Netdevs: s.Netdevs, Route: s.Route})
			if err != nil {
				out[i].Err = fmt.Errorf("read counters on host %q: %w", s.Host, err)
				return
			}
			out[i].C = &c
		}()
	}
	wg.Wait()
	return out
}

type counterID struct {
	device string
	port   int
	source string
	name   string
}

// CounterSamples turns the readings before and after w into samples (the
// deltas) and notes: counters that could not be read, are absent on the
// device, or went backwards (reset or wrapped: said, not a negative delta).
func CounterSamples(w *Workload, before, after []CounterReading) ([]results.Sample, []results.CounterNote) {
	var ss []results.Sample
	var notes []results.CounterNote
	hostStart := 0 // the first note of the host read last
	for i, a := range after {
		host := a.Host
		notes = boundCounterNotes(notes, hostStart)
		hostStart = len(notes)
		var b CounterReading
		if i < len(before) {
			b = before[i]
		}
		if b.Err != nil || a.Err != nil || b.C == nil || a.C == nil {
			err := b.Err
			if err == nil {
				err = a.Err
			}
			reason := "not read"
			if err != nil {
				reason = err.Error()
			}
			notes = append(notes, results.CounterNote{Host: host, Problem: results.NoteUnreadable, Reason: reason})
			continue
		}
		seen := map[string]bool{}
		for _, c := range []*proto.Counters{a.C, b.C} {
			for _, u := range c.Unreadable {
				u.Device, u.Source, u.Name = hostText(u.Device, "._@:+-"), hostText(u.Source, "_"), hostText(u.Name, "_.-")
				key := u.Device + "\x00" + strconv.Itoa(u.Port) + "\x00" + u.Source + "\x00" + u.Name
				if seen[key] {
					continue
				}
				seen[key] = true
				kind := results.NoteUnreadable
				if u.Absent {
					kind = results.NoteAbsent
				}
				notes = append(notes, results.CounterNote{Host: host, Device: u.Device, Source: u.Source, Counter: u.Name, Problem: kind, Reason: u.Reason})
			}
		}
		prev := map[counterID]uint64{}
		for _, v := range b.C.Values {
			prev[counterID{v.Device, v.Port, v.Source, v.Name}] = v.Value
		}
		// Device-wide hw_counters repeat the port's on one-port devices
		// (mlx5): keep the port's, so one name is one sample per device.
		atPort := map[[2]string]bool{}
		for _, v := range a.C.Values {
			if v.Port > 0 {
				atPort[[2]string{v.Device, v.Name}] = true
			}
		}
		for _, v := range a.C.Values {
			if v.Source == proto.CounterDeviceHW && atPort[[2]string{v.Device, v.Name}] {
				continue
			}
			if !plainName(v.Name, "_.-") || !plainName(v.Device, "._@:+-") || !plainName(v.Source, "_") {
				// Host text that is no counter name (the agent checks too):
				// it never becomes a metric a terminal prints.
				notes = append(notes, results.CounterNote{Host: host, Problem: results.NoteUnreadable,
					Reason: fmt.Sprintf("not a counter name: %.80q on %.80q", v.Name, v.Device)})
				continue
			}
			id := counterID{v.Device, v.Port, v.Source, v.Name}
			p, ok := prev[id]
			switch {
			case !ok:
				notes = append(notes, results.CounterNote{Host: host, Device: v.Device, Source: v.Source, Counter: v.Name, Problem: results.NoteUnreadable, Reason: "not read before the workload"})
				continue
			case v.Value < p:
				notes = append(notes, results.CounterNote{Host: host, Device: v.Device, Source: v.Source, Counter: v.Name, Problem: results.NoteReset,
					Reason: fmt.Sprintf("went from %d to %d: reset or wrapped during the workload, no delta", p, v.Value)})
				continue
			}
			extra := map[string]string{results.CounterExtra: v.Source}
			if v.Port > 0 {
				extra["port"] = strconv.Itoa(v.Port)
			}
			ss = append(ss, results.Sample{Metric: v.Name, Value: float64(v.Value - p), Unit: results.CounterUnit(v.Name),
				Meta: results.Meta{Workload: w.Name, Tool: w.Tool, Hosts: []string{host}, Devices: []string{v.Device}, Extra: extra}})
		}
	}
	notes = boundCounterNotes(notes, hostStart)
	sort.SliceStable(notes, func(i, j int) bool { return notes[i].Host < notes[j].Host })
	return ss, notes
}

// boundCounterNotes bounds the notes of one host, notes[from:]: each
// reason cut to MaxCounterReason bytes and, past MaxCounterNotes, the rest
// counted in one note (SECURITY 153).
func boundCounterNotes(notes []results.CounterNote, from int) []results.CounterNote {
	for i := from; i < len(notes); i++ {
		if r := notes[i].Reason; len(r) > MaxCounterReason {
			c := MaxCounterReason
			for c > 0 && !utf8.RuneStart(r[c]) {
				c--
			}
			notes[i].Reason = strings.Clone(r[:c]) + "…" // not the whole reason behind it
		}
	}
	if more := len(notes) - from - MaxCounterNotes; more > 0 {
		host := notes[from].Host
		notes = append(notes[:from+MaxCounterNotes:from+MaxCounterNotes], results.CounterNote{Host: host, Problem: results.NoteUnreadable,
			Reason: fmt.Sprintf("and %d more counters of this host not read, absent or reset (notes past %d are left out)", more, MaxCounterNotes)})
	}
	return notes
}

// plainName: 1-64 of [A-Za-z0-9] and the given punctuation, as the kernel
// names counters, devices and netdevs.
func plainName(s, punct string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(punct, r)) {
			return false
		}
	}
	return true
}

// hostText is s when it is a plain name (or empty, or already quoted in
// printable ASCII, as the agent quotes a file name that is no counter
// name), else s quoted: a hostile agent's names never reach a terminal or
// a file raw.
func hostText(s, punct string) string {
	if s == "" || plainName(s, punct) {
		return s
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' && len(s) <= 200 {
		printable := true
		for i := 0; i < len(s); i++ {
			printable = printable && s[i] >= 0x20 && s[i] < 0x7f
		}
		if printable {
			return s
		}
	}
	return fmt.Sprintf("%.80q", s)
}

// MaxCounterNotes bounds the notes one host's counters make of a workload
// (unreadable, absent, reset), and MaxCounterReason each note's reason: a
// counters.read answer may name proto.MaxCounters unreadable counters with
// a 4 KiB reason each (as much as a reply line holds), before and after
// the workload, and every note is kept for the run (results.json,
// summary.md): about 16 MB a workload and host (SECURITY 153). An honest
// reading has a few: a folder the device lacks, a file the driver refuses.
// Past the bound one note counts the rest.
const (
	MaxCounterNotes  = 100
	MaxCounterReason = 512
)
