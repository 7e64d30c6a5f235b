package plan

import (
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/kinds"
)

// Trial is one resolved trial of a workload step: one size × one repeat,
// the port it uses and the argv its side runs, built by the family's argv
// hook (kinds.Argver), the same function the step calls at run time. What
// only the run learns from the device-create steps stays a named
// placeholder: {server.gid}, {client.gid} (GID indexes), {mtu} (the
// pair's path MTU) and {server.addr} (the server device's IPv4 address).
// perftest's --out_json is added at run time when the client host's
// perftest has it (its facts).
type Trial struct {
	Size   int64    `json:"size,omitempty"`
	Repeat int      `json:"repeat"`
	Port   int      `json:"port"`
	Argv   []string `json:"argv"`
}

// resolveTrials fills the Trials of a two-sided RDMA workload's server
// and client steps through its family's argv hook; a family without one
// (tcp, exec, program) leaves them empty.
func (b *builder) resolveTrials(w *lab.Workload, srv, cli *Step) {
	if w.ServerDevice == nil || w.ClientDevice == nil {
		return
	}
	end := func(d *lab.Device, gid kinds.Value) kinds.End {
		e := kinds.End{Device: d.Device, GID: gid, Port: d.Port}
		if d.IWARP() {
			e.Transport = "iWARP"
		}
		return e
	}
	emulated := b.o.Emulated[w.ServerHost.Name] != "" || b.o.Emulated[w.ClientHost.Name] != ""
	for _, u := range kinds.Trials(&w.Workload, w.Sizes) {
		in := kinds.ArgvIn{W: &w.Workload, Trial: u, Port: kinds.PortFor(w.Index, 0, u.N),
			Server: end(w.ServerDevice, kinds.ServerGID), Client: end(w.ClientDevice, kinds.ClientGID),
			MTU: kinds.PathMTU, Addr: kinds.ServerAddr, Emulated: emulated}
		s, c, ok := kinds.ArgvOf(in)
		if !ok {
			return
		}
		srv.Trials = append(srv.Trials, Trial{Size: u.Size, Repeat: u.Repeat, Port: in.Port, Argv: s})
		cli.Trials = append(cli.Trials, Trial{Size: u.Size, Repeat: u.Repeat, Port: in.Port, Argv: c})
	}
}
