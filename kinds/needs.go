package kinds

// Need is an RDMA operation a program workload declares it posts (its
// needs attribute) that not every device kind does: the lab checker
// refuses it at validate on a device that cannot, and preflight on an rdma
// device that turns out to be such.
type Need struct {
	Name string
	// IWARP is why an iWARP device (siw, an iWARP NIC) cannot do it.
	IWARP string
}

// Needs are the operations a program may declare. iWARP's RDMAP (RFC
// 5040) has no immediate data and no atomics: the kernel's siw refuses
// those opcodes in siw_post_send and reports atomic_cap 0, and rdma-core's
// siw provider refuses them when the work request is posted, so the
// program would fail at ibv_post_send, after the connection is up.
var Needs = []Need{
	{"write_with_imm", "iWARP has no RDMA WRITE with immediate data (the siw provider refuses IBV_WR_RDMA_WRITE_WITH_IMM at ibv_post_send)"},
	{"send_with_imm", "iWARP has no SEND with immediate data (the siw provider refuses IBV_WR_SEND_WITH_IMM at ibv_post_send)"},
	{"atomics", "iWARP has no atomic operations (siw reports atomic_cap 0 and refuses IBV_WR_ATOMIC_CMP_AND_SWP and IBV_WR_ATOMIC_FETCH_AND_ADD at ibv_post_send)"},
}

// NeedByName returns the Need named n.
func NeedByName(n string) (Need, bool) {
	for _, d := range Needs {
		if d.Name == n {
			return d, true
		}
	}
	return Need{}, false
}

// NeedNames lists the names of Needs, for messages.
func NeedNames() []string {
	var out []string
	for _, d := range Needs {
		out = append(out, d.Name)
	}
	return out
}
