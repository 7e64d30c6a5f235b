package kinds

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Planned is one trial of a workload as engine/plan resolves it and the
// family's op runs it: its size and repeat, its port and both sides'
// argv with the placeholders only the run can fill (ServerGID, ...).
// Server is nil for a tool that runs one command on one host.
type Planned struct {
	Trial
	Port           int
	Server, Client []string
}

// PlanTrials resolves every trial of in.W through its family's argv hook:
// in holds what is known before the run (device names, placeholders for
// the rest), and each trial gets its size, repeat and port (PortFor, from
// first: 0 for the workload's block). ok is false when the family has no
// hook. sizes nil: one unsized trial per repeat.
// A device's name is held as ServerDev or ClientDev: the run's device
// may be one the host already had, under its own name (rxe.ensure reuses
// it), and the plan shows the lab's (ShowAs).
func PlanTrials(in ArgvIn, first int, sizes []int64) (ps []Planned, ok bool) {
	if in.Server.Device != "" {
		in.Server.Device = string(ServerDev)
	}
	if in.Client.Device != "" {
		in.Client.Device = string(ClientDev)
	}
	for _, u := range Trials(in.W, sizes) {
		in.Trial, in.Port = u, PortFor(in.W.Index, first, u.N)
		s, c, found := ArgvOf(in)
		if !found {
			return nil, false
		}
		ps = append(ps, Planned{Trial: u, Port: in.Port, Server: s, Client: c})
	}
	return ps, true
}

// Show is an argv as a plan prints it: a placeholder as {server.gid}, a
// program's self.* the trial has no value for as the lab wrote it
// (${self.size}).
func Show(argv []string) []string { return ShowAs(argv, nil) }

// ShowAs is Show with the placeholders in names shown as their values: a
// plan shows ServerDev and ClientDev as the lab's device names.
func ShowAs(argv []string, names Values) []string {
	if argv == nil {
		return nil
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		var b strings.Builder
		for _, t := range marked(a) {
			v, named := names[Value(t.text)]
			switch {
			case !t.mark:
				b.WriteString(t.text)
			case named:
				b.WriteString(v)
			case strings.HasPrefix(t.ref, "self."):
				b.WriteString("${" + t.ref + "}")
			default:
				b.WriteString("{" + t.ref + "}")
			}
		}
		out[i] = b.String()
	}
	return out
}

// Name is a placeholder as people read it: {server.gid}.
func (v Value) Name() string { return Show([]string{string(v)})[0] }

// Values are what a run learned for one trial: the value of each
// placeholder it can fill.
type Values map[Value]string

// valid says whether v may fill placeholder p: a GID index or an MTU is a
// decimal number, an address an IP address, a device a device name
// (ValidDeviceName). Nothing else gets in, so a
// filled value is never an option ("-R"), never a second placeholder, and
// the argv keeps its length: a value cannot add an argument.
func valid(p Value, v string) error {
	switch p {
	case ServerGID, ClientGID, PathMTU:
		if v == "" || strings.Trim(v, "0123456789") != "" {
			return fmt.Errorf("%q is not a number", v)
		}
	case ServerAddr:
		a, err := netip.ParseAddr(v)
		if err != nil || a.Zone() != "" {
			return fmt.Errorf("%q is not an IP address", v)
		}
	case ServerDev, ClientDev:
		if !ValidDeviceName(v) {
			return fmt.Errorf("%q is not an RDMA device name", v)
		}
	}
	return nil
}

// ValidDeviceName is the lab's rule for RDMA device names (engine/lab's
// too): 1-63 of A-Z a-z 0-9 _ . -, not starting with -, so no option.
func ValidDeviceName(n string) bool {
	if n == "" || len(n) > 63 || n[0] == '-' {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

// known reports whether p is a placeholder a run fills.
func known(p Value) bool {
	switch p {
	case ServerGID, ClientGID, PathMTU, ServerAddr, ServerDev, ClientDev:
		return true
	}
	return false
}

// Fill is argv with each placeholder replaced by its value in vals, or
// an error naming the workload and the first placeholder that is unknown
// (no run fills it, or it is broken), has no value in vals, or whose value
// is not one it may take (valid): such an argv never reaches a tool.
func Fill(workload string, argv []string, vals Values) ([]string, error) {
	if argv == nil {
		return nil, nil
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		var b strings.Builder
		for _, t := range marked(a) {
			if t.broken {
				return nil, fmt.Errorf("workload %q: argument %d (%s): a broken placeholder", workload, i, Show([]string{argv[i]})[0])
			}
			if !t.mark {
				b.WriteString(t.text)
				continue
			}
			p := Value(t.text)
			v, ok := vals[p]
			var err error
			switch {
			case strings.HasPrefix(t.ref, "self."):
				err = errors.New("it has no value in this trial")
			case !known(p):
				err = errors.New("an unknown placeholder: no run fills it")
			case !ok:
				err = errors.New("this run found no value for it")
			default:
				err = valid(p, v)
			}
			if err != nil {
				return nil, fmt.Errorf("workload %q: placeholder %s in argument %d: %w", workload, p.Name(), i, err)
			}
			b.WriteString(v)
		}
		out[i] = b.String()
	}
	return out, nil
}

// Omit drops from argv an option whose value is placeholder p, for a
// value the run did not find and the tool can do without: perftest's
// `-m {mtu}` when neither device reported an active MTU runs without -m
// (perftest then picks the port's MTU itself), as it did before the op
// ran the plan's argv. A placeholder standing alone drops the option
// before it too when that begins with "-"; one inside an argument
// ("--mtu={mtu}") drops that argument.
func Omit(argv []string, p Value) []string {
	if argv == nil {
		return nil
	}
	out := make([]string, 0, len(argv))
	for _, a := range argv {
		if !strings.Contains(a, string(p)) {
			out = append(out, a)
			continue
		}
		if n := len(out); a == string(p) && n > 0 && strings.HasPrefix(out[n-1], "-") {
			out = out[:n-1]
		}
	}
	return out
}
