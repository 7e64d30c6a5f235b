package plan

import (
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/kinds"
)

// Trial is one resolved trial of a workload step: one size × one repeat,
// the port it uses and the argv its side runs, built by the family's argv
// hook (kinds.Argver); the step's op runs exactly this argv
// (WorkloadPlan.Trials, sensitive values unhidden). What
// only the run learns from the device-create steps stays a named
// placeholder: {server.dev}, {client.dev} (the devices' names: a
// host may have one already on the netdev, which the run reuses under its
// own name; the plan shows the lab's), {server.gid}, {client.gid} (GID indexes), {mtu} (the
// pair's path MTU) and {server.addr} (the IPv4 address of the server
// device's netdev, which a tcp client or a program's self.server_address
// dials too when its lab dials an rxe).
// tcp's "argv" is what its agent calls are asked (tcp.serve, tcp.send:
// the agent runs no program), with the port the plan gives; the server
// may bind another when that one is taken, and the run records that.
// The run fills each placeholder with a value of its form only (a
// number, an IP address: kinds.Fill), so no value adds an argument; an
// unknown or unfilled one stops the workload. perftest's --out_json is
// added at run time when the client host's perftest has it (its facts),
// as are -R and a raised QP timeout when the run finds an rdma block's
// device iWARP or an end emulated that the plan could not know. A program's commands have their self.*
// filled; they run in the folder the program is built in. A tool that
// runs on one host only (exec) is given no port.
type Trial struct {
	Size   int64    `json:"size,omitempty"`
	Repeat int      `json:"repeat"`
	Port   int      `json:"port,omitempty"`
	Argv   []string `json:"argv"`
}

// resolveTrials fills the Trials of a workload's steps through its
// family's argv hook (kinds.PlanTrials), and keeps on its client (or
// one) step what the run executes (WorkloadPlan.Trials): the server and client steps of a two-sided one, or
// (srv nil) the one step of a workload on one host. dial is where a client
// without an RDMA device of its server dials (tcp, a program).
func (b *builder) resolveTrials(w *lab.Workload, srv, cli *Step, dial lab.Dial) {
	in := kinds.ArgvIn{W: &w.Workload}
	end := func(d *lab.Device, gid kinds.Value) kinds.End {
		e := kinds.End{Device: d.Device, GID: gid, Port: d.Port}
		if d.IWARP() {
			e.Transport = "iWARP"
		}
		return e
	}
	if srv != nil {
		if w.ServerDevice != nil {
			in.Server, in.Addr = end(w.ServerDevice, kinds.ServerGID), kinds.ServerAddr
		} else {
			// The IPv4 of the rxe netdev it dials (known at run time),
			// else the address the lab gives, else the server host's name.
			switch {
			case dial.Device != nil:
				in.Addr = kinds.ServerAddr
			case dial.Addr != "":
				in.Addr = kinds.Value(dial.Addr)
			default:
				in.Addr = kinds.Value(w.ServerHost.Name)
			}
		}
		if w.ClientDevice != nil {
			in.Client = end(w.ClientDevice, kinds.ClientGID)
		}
		if w.ServerDevice != nil && w.ClientDevice != nil {
			in.MTU = kinds.PathMTU
			in.Emulated = b.o.Emulated[w.ServerHost.Name] != "" || b.o.Emulated[w.ClientHost.Name] != ""
		}
	}
	t, _ := kinds.Lookup(w.Tool)
	sizes := w.Sizes
	if !t.Sizes {
		sizes = nil
	}
	ps, ok := kinds.PlanTrials(in, 0, sizes)
	if !ok {
		return
	}
	// The run executes these (WorkloadPlan.Trials, with the sensitive
	// values the lab gives); the steps show them (redact hides those).
	cli.planned = ps
	// The plan shows the lab's device names; the run uses the hosts'.
	names := kinds.Values{}
	if w.ServerDevice != nil {
		names[kinds.ServerDev] = w.ServerDevice.Device
	}
	if w.ClientDevice != nil {
		names[kinds.ClientDev] = w.ClientDevice.Device
	}
	for _, u := range ps {
		port := u.Port
		if t.OneHost {
			port = 0
		}
		if srv != nil {
			srv.Trials = append(srv.Trials, Trial{Size: u.Size, Repeat: u.Repeat, Port: port, Argv: kinds.ShowAs(u.Server, names)})
		}
		cli.Trials = append(cli.Trials, Trial{Size: u.Size, Repeat: u.Repeat, Port: port, Argv: kinds.ShowAs(u.Client, names)})
	}
}
