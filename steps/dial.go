package steps

import "fmt"

// DialAddr is the address a tcp client dials (lab.ServerDial): the IPv4 of
// the server host's data rxe's netdev, the address the lab gives, or the
// host's name. The tcp op (kinds/tcp) and CounterSides (which netdev
// each end reads) share it.
func DialAddr(env *Env, w *Workload) (string, error) {
	if w.DialDevice != "" {
		info, err := env.Device(w.DialDevice)
		if err != nil {
			return "", fmt.Errorf("workload %q (tcp): the data link to dial: %w", w.Name, err)
		}
		if info.IPv4 == "" {
			return "", fmt.Errorf("workload %q (tcp): rxe %q on host %q has no IPv4 address on %s for the client to reach; give %s an IPv4 address (the tcp baseline dials the data network the RDMA workloads use)", w.Name, w.DialDevice, w.ServerHost, info.Netdev, info.Netdev)
		}
		return info.IPv4, nil
	}
	if w.ServerAddr != "" {
		return w.ServerAddr, nil
	}
	return w.ServerHost, nil
}
