package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/rlab-dev/rlab/agent/proto"
)

// counters.read: the kernel's own counters of the RDMA devices and netdevs a
// workload uses, read from sysfs so the controller can take the difference
// before and after it. A counter that cannot be read is said so with the
// reason, never given as zero.

// sysRoot is where sysfs is; tests read fixture trees instead.
const sysRoot = "/sys"

const (
	// counterFileMax bounds one counter file: a u64 is at most 20 digits.
	// A longer file is not a counter.
	counterFileMax = 64
	// counterDirMax bounds the files read from one counter folder (mlx5
	// has about 40; the response must stay far below proto.MaxLine).
	counterDirMax = 512
	// counterNameMax bounds a counter's name.
	counterNameMax = 64
)

func (s *Server) countersRead(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.CountersReadParams
	if err := decode(proto.MethodCountersRead, params, &p); err != nil {
		return nil, err
	}
	for _, n := range append(append([]string(nil), p.RDMA...), p.Netdevs...) {
		if !validDeviceName(n) {
			return nil, perr(proto.CodeBadRequest, "%s: device name %q: want 1-64 of [A-Za-z0-9._@:+-]", proto.MethodCountersRead, n)
		}
	}
	var routeNetdev, routeErr string
	if p.Route != "" {
		nd, err := netdevFor(ctx, p.Route)
		if err != nil {
			routeErr = err.Error()
		} else {
			routeNetdev = nd
			p.Netdevs = append(p.Netdevs, nd)
		}
	}
	out := readCounters(sysRoot, p.RDMA, p.Netdevs)
	out.RouteNetdev = routeNetdev
	if routeErr != "" {
		out.Unreadable = append(out.Unreadable, proto.CounterUnreadable{Source: proto.CounterNetdev, Reason: routeErr})
	}
	return out, nil
}

// validDeviceName accepts names that are one sysfs path element.
func validDeviceName(n string) bool {
	if n == "" || len(n) > 64 || n == "." || n == ".." {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._@:+-", r)) {
			return false
		}
	}
	return true
}

// ValidCounterName accepts a counter file name as the kernel spells them
// (rcvd_seq_err, VL15_dropped, port_xmit_data): 1-64 of [A-Za-z0-9_.-].
// Anything else from sysfs is host text, not a counter: it is reported as
// unreadable, under a quoted name.
func ValidCounterName(n string) bool {
	if n == "" || len(n) > counterNameMax || n == "." || n == ".." {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

// ParseCounter reads a sysfs counter file's content: a decimal u64 and a
// newline. Anything else is an error that says what was there.
func ParseCounter(b []byte) (uint64, error) {
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return 0, errors.New("empty")
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a counter: %q", truncateText(s, 24))
	}
	return v, nil
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// readCounters reads the counters of the RDMA devices and netdevs under
// the sysfs tree at root.
func readCounters(root string, rdma, netdevs []string) proto.Counters {
	out := proto.Counters{TimeUnixNano: time.Now().UnixNano(), Values: []proto.CounterValue{}}
	for _, dev := range rdma {
		dir := filepath.Join(root, "class", "infiniband", dev)
		if _, err := os.Stat(dir); err != nil {
			out.Unreadable = append(out.Unreadable, proto.CounterUnreadable{Device: dev, Source: proto.CounterPortHW,
				Absent: errors.Is(err, fs.ErrNotExist), Reason: "no such RDMA device: " + reason(err)})
			continue
		}
		readCounterDir(&out, filepath.Join(dir, "hw_counters"), dev, 0, proto.CounterDeviceHW)
		ports, err := os.ReadDir(filepath.Join(dir, "ports"))
		if err != nil {
			out.Unreadable = append(out.Unreadable, proto.CounterUnreadable{Device: dev, Source: proto.CounterPortHW, Reason: "read ports: " + reason(err)})
			continue
		}
		for _, pe := range ports {
			n, err := strconv.Atoi(pe.Name())
			if err != nil || n <= 0 {
				continue
			}
			pdir := filepath.Join(dir, "ports", pe.Name())
			readCounterDir(&out, filepath.Join(pdir, "counters"), dev, n, proto.CounterPort)
			readCounterDir(&out, filepath.Join(pdir, "hw_counters"), dev, n, proto.CounterPortHW)
		}
	}
	for _, nd := range netdevs {
		dir := filepath.Join(root, "class", "net", nd)
		if _, err := os.Stat(dir); err != nil {
			out.Unreadable = append(out.Unreadable, proto.CounterUnreadable{Device: nd, Source: proto.CounterNetdev,
				Absent: errors.Is(err, fs.ErrNotExist), Reason: "no such netdev: " + reason(err)})
			continue
		}
		readCounterDir(&out, filepath.Join(dir, "statistics"), nd, 0, proto.CounterNetdev)
	}
	return out
}

// readCounterDir reads every counter file of one folder. A folder that is
// not there is absent (rxe has no IB PortCounters, most devices no
// device-wide hw_counters); that is said once for the folder, except for
// device-wide hw_counters, which few devices have.
func readCounterDir(out *proto.Counters, dir, dev string, port int, source string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if source != proto.CounterDeviceHW {
				out.Unreadable = append(out.Unreadable, proto.CounterUnreadable{Device: dev, Port: port, Source: source, Absent: true, Reason: "the device has no " + source + " folder"})
			}
			return
		}
		out.Unreadable = append(out.Unreadable, proto.CounterUnreadable{Device: dev, Port: port, Source: source, Reason: "read folder: " + reason(err)})
		return
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	if len(ents) > counterDirMax {
		out.Unreadable = append(out.Unreadable, proto.CounterUnreadable{Device: dev, Port: port, Source: source,
			Reason: fmt.Sprintf("%d files: only the first %d read", len(ents), counterDirMax)})
		ents = ents[:counterDirMax]
	}
	for _, e := range ents {
		name := e.Name()
		if name == "lifespan" && source != proto.CounterNetdev && source != proto.CounterPort {
			continue // hw_counters/lifespan is how long the kernel caches them (ms), not a counter
		}
		if e.IsDir() {
			continue
		}
		if !ValidCounterName(name) {
			out.Unreadable = append(out.Unreadable, proto.CounterUnreadable{Device: dev, Port: port, Source: source,
				Name: strconv.Quote(truncateText(name, counterNameMax)), Reason: "not a counter name"})
			continue
		}
		v, err := readCounterFile(filepath.Join(dir, name))
		if err != nil {
			out.Unreadable = append(out.Unreadable, proto.CounterUnreadable{Device: dev, Port: port, Source: source, Name: name, Reason: err.Error()})
			continue
		}
		out.Values = append(out.Values, proto.CounterValue{Device: dev, Port: port, Source: source, Name: name, Value: v})
	}
}

// readCounterFile reads one counter, at most counterFileMax bytes of it.
func readCounterFile(p string) (uint64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, errors.New(reason(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, counterFileMax+1))
	if err != nil {
		return 0, errors.New(reason(err))
	}
	if len(b) > counterFileMax {
		return 0, fmt.Errorf("longer than %d bytes: not a counter", counterFileMax)
	}
	return ParseCounter(b)
}

// reason is an error's cause without the path (the caller names it).
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err.Error()
}

// netdevFor is the netdev traffic to addr goes by: the one holding addr
// when it is this host's, else the one the route to it leaves by.
func netdevFor(ctx context.Context, addr string) (string, error) {
	ip := net.ParseIP(addr)
	if ip == nil {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		ips, err := net.DefaultResolver.LookupIP(ctx, "ip", addr)
		if err != nil || len(ips) == 0 {
			return "", fmt.Errorf("find the netdev to %q: resolve: %v", addr, err)
		}
		ip = ips[0]
		for _, x := range ips {
			if x.To4() != nil {
				ip = x
				break
			}
		}
	}
	ifs, err := net.Interfaces()
	if err == nil {
		for _, ifc := range ifs {
			as, _ := ifc.Addrs()
			for _, a := range as {
				if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
					return ifc.Name, nil
				}
			}
		}
	}
	routes, err := netlink.RouteGet(ip)
	if err != nil || len(routes) == 0 {
		return "", fmt.Errorf("find the netdev to %s: route: %v", ip, err)
	}
	link, err := netlink.LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		return "", fmt.Errorf("find the netdev to %s: link %d: %v", ip, routes[0].LinkIndex, err)
	}
	return link.Attrs().Name, nil
}
