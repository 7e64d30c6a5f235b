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
// pair's path MTU) and {server.addr} (the IPv4 address of the server
// device's netdev, which a tcp client dials too when its lab dials an rxe).
// tcp's "argv" is what its agent calls are asked (tcp.serve, tcp.send:
// the agent runs no program), with the port the plan gives; the server
// may bind another when that one is taken, and the run records that.
// perftest's --out_json is added at run time when the client host's
// perftest has it (its facts).
type Trial struct {
	Size   int64    `json:"size,omitempty"`
	Repeat int      `json:"repeat"`
	Port   int      `json:"port"`
	Argv   []string `json:"argv"`
}

// resolveTrials fills the Trials of a two-sided workload's server and
// client steps through its family's argv hook; a family without one
// (exec, program) leaves them empty. dial is where a client without an
// RDMA device of its server dials (tcp).
func (b *builder) resolveTrials(w *lab.Workload, srv, cli *Step, dial lab.Dial) {
	in := kinds.ArgvIn{W: &w.Workload}
	sizes := w.Sizes
	switch {
	case w.ServerDevice != nil && w.ClientDevice != nil:
		end := func(d *lab.Device, gid kinds.Value) kinds.End {
			e := kinds.End{Device: d.Device, GID: gid, Port: d.Port}
			if d.IWARP() {
				e.Transport = "iWARP"
			}
			return e
		}
		in.Server, in.Client = end(w.ServerDevice, kinds.ServerGID), end(w.ClientDevice, kinds.ClientGID)
		in.MTU, in.Addr = kinds.PathMTU, kinds.ServerAddr
		in.Emulated = b.o.Emulated[w.ServerHost.Name] != "" || b.o.Emulated[w.ClientHost.Name] != ""
	case w.ServerDevice == nil && w.ClientDevice == nil:
		// tcp: the IPv4 of the rxe netdev it dials (known at run time),
		// else the address the lab gives, else the server host's name.
		sizes = nil
		switch {
		case dial.Device != nil:
			in.Addr = kinds.ServerAddr
		case dial.Addr != "":
			in.Addr = kinds.Value(dial.Addr)
		default:
			in.Addr = kinds.Value(w.ServerHost.Name)
		}
	default:
		return
	}
	for _, u := range kinds.Trials(&w.Workload, sizes) {
		in.Trial, in.Port = u, kinds.PortFor(w.Index, 0, u.N)
		s, c, ok := kinds.ArgvOf(in)
		if !ok {
			return
		}
		srv.Trials = append(srv.Trials, Trial{Size: u.Size, Repeat: u.Repeat, Port: in.Port, Argv: s})
		cli.Trials = append(cli.Trials, Trial{Size: u.Size, Repeat: u.Repeat, Port: in.Port, Argv: c})
	}
}
