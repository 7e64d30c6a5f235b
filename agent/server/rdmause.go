package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rlab-dev/rlab/agent/proto"
)

// rdmaUse readies a workload end on an RDMA device rlab did not create
// (hardware, or an rxe/siw an admin made): it checks the device and port
// and picks the GID and MTU by the port's link layer. It creates nothing,
// and nothing it returns is ever deleted.
func (s *Server) rdmaUse(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.RDMAUseParams
	if err := decode(proto.MethodRDMAUse, params, &p); err != nil {
		return nil, err
	}
	if err := validRDMAName(p.Name); err != nil || p.Name == "" {
		return nil, perr(proto.CodeBadRequest, "rdma.use: bad device name %q", p.Name)
	}
	if p.Port == 0 {
		p.Port = 1
	}
	return useDevice(p.Name, p.Port)
}

// useDevice is rdma.use without the wire: what a device's sysfs tree says.
func useDevice(name string, portNum int) (*proto.DeviceInfo, error) {
	what := fmt.Sprintf("use RDMA device %q port %d", name, portNum)
	if _, err := os.Stat(filepath.Join(sysClassIB, name)); errors.Is(err, fs.ErrNotExist) {
		return nil, perr(proto.CodeNotFound, "%s: no such device; this host has: %s", what, rdmaNames())
	}
	dev := readRDMADevice(name)
	port, ok := portN(dev, portNum)
	if !ok {
		var have []string
		for _, pt := range dev.Ports {
			have = append(have, strconv.Itoa(pt.Port))
		}
		return nil, perr(proto.CodeNotFound, "%s: the device has no port %d; its ports: %s", what, portNum, orNone(have))
	}
	if port.State != "ACTIVE" {
		return nil, perr(proto.CodeUnsupported, "%s: port state is %s (physical state %s), not ACTIVE: check the cable, the switch port and (InfiniBand) the subnet manager",
			what, orDash(port.State), orDash(port.PhysState))
	}
	info := &proto.DeviceInfo{Name: name, Port: portNum, Driver: dev.Driver, NodeGUID: dev.NodeGUID, Transport: portTransport(dev, port), LID: port.LID}
	info.Netdev = portNetdev(dev, port)
	var ipv4 net.IP
	var mtu int
	if info.Netdev != "" {
		if ifc, err := net.InterfaceByName(info.Netdev); err == nil {
			ipv4, mtu = firstIPv4(ifc), ifc.MTU
		}
	}
	if ipv4 != nil {
		info.IPv4 = ipv4.String()
	}
	switch info.Transport {
	case TransportUnspecified:
		return nil, perr(proto.CodeUnsupported, "%s: link layer %s, node type %s: neither RoCE, InfiniBand nor iWARP (an AWS EFA device, whose SRD transport libfabric speaks, or a usNIC), and rlab's workloads need one of those: use the instance's Ethernet netdev with an rxe block instead",
			what, orDash(port.LinkLayer), orDash(dev.NodeType))
	case "InfiniBand":
		// An InfiniBand port is addressed by its LID; GID 0 (the port
		// GUID on the default subnet prefix) is always valid. The port's
		// MTU is the subnet's: perftest reads it from the port.
		info.GIDIndex = 0
		if port.LID == 0 {
			return nil, perr(proto.CodeUnsupported, "%s: InfiniBand port has no LID: is a subnet manager (opensm) running on the fabric?", what)
		}
	case "iWARP":
		// iWARP has no GID table to choose from: the RDMA CM resolves
		// the peer by IP address.
		info.GIDIndex = 0
		info.ActiveMTU = RXEActiveMTU(mtu)
	default: // RoCE
		if ipv4 == nil {
			return nil, perr(proto.CodeUnsupported, "%s: its netdev %s has no IPv4 address, so there is no RoCE v2 GID to use: give it one", what, orDash(info.Netdev))
		}
		g, ok := RoCEv2GID(port.GIDs, ipv4)
		if !ok {
			return nil, perr(proto.CodeUnsupported, "%s: no RoCE v2 GID maps %s (netdev %s); the port's GIDs: %s", what, ipv4, info.Netdev, gidList(port.GIDs))
		}
		info.GIDIndex, info.GID = g.Index, g.GID
		info.ActiveMTU = port.ActiveMTU
		if info.ActiveMTU == 0 {
			// Hardware RoCE derives the port MTU from the netdev's, as
			// rxe does (sysfs has no MTU attribute).
			info.ActiveMTU = RXEActiveMTU(mtu)
		}
	}
	return info, nil
}

// portNetdev is the network interface a port's traffic leaves by: the
// netdev of its GIDs (RoCE), else rxe's parent or the device's own netdevs.
func portNetdev(d proto.RDMADevice, p proto.RDMAPort) string {
	for _, g := range p.GIDs {
		if g.Netdev != "" {
			return g.Netdev
		}
	}
	if d.Parent != "" {
		return d.Parent
	}
	if len(d.Netdevs) > 0 {
		return d.Netdevs[0]
	}
	return ""
}

func rdmaNames() string {
	ents, _ := os.ReadDir(sysClassIB)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return orNone(out)
}

func gidList(gs []proto.GID) string {
	var out []string
	for _, g := range gs {
		out = append(out, fmt.Sprintf("%d=%s (%s)", g.Index, g.GID, orDash(g.Type)))
	}
	return orNone(out)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
