package roce

import "fmt"

// Transport is the transport service class in the top three bits of a BTH
// opcode.
type Transport uint8

// Transport classes (IBA 9.2 table 38; CNP is RoCEv2 annex A17.9.2).
const (
	RC  Transport = 0 // reliable connection
	UC  Transport = 1 // unreliable connection
	RD  Transport = 2 // reliable datagram
	UD  Transport = 3 // unreliable datagram
	CNP Transport = 4 // congestion notification (opcode 0x81)
	XRC Transport = 5 // extended reliable connection
)

func (t Transport) String() string {
	switch t {
	case RC:
		return "RC"
	case UC:
		return "UC"
	case RD:
		return "RD"
	case UD:
		return "UD"
	case CNP:
		return "CNP"
	case XRC:
		return "XRC"
	}
	return "VENDOR"
}

// Class groups opcodes by the operation a user thinks in: the series of the
// IO graph and the lanes of the summary.
type Class uint8

// Operation classes.
const (
	ClassOther  Class = iota // reserved or vendor opcodes
	ClassSend                // SEND and its variants (also UD sends, CM MADs)
	ClassWrite               // RDMA WRITE and ATOMIC WRITE
	ClassRead                // RDMA READ request and responses
	ClassAtomic              // CmpSwap, FetchAdd and their acknowledgement
	ClassAck                 // Acknowledge (ACK / NAK)
	ClassCNP                 // congestion notification
	ClassFlush               // FLUSH
	numClasses
)

var classNames = [numClasses]string{"OTHER", "SEND", "WRITE", "READ", "ATOMIC", "ACK", "CNP", "FLUSH"}

func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return "OTHER"
}

// Header is a bit set naming the extended transport headers after the BTH.
type Header uint16

// Extended headers in wire order (IBA 9.2: BTH, RDETH, DETH, XRCETH,
// RETH/FETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH).
const (
	HdrRDETH Header = 1 << iota
	HdrDETH
	HdrXRCETH
	HdrFETH
	HdrRETH
	HdrAtomicETH
	HdrAETH
	HdrAtomicAckETH
	HdrImmDt
	HdrIETH
	HdrCNPPad // the 16 reserved bytes of a CNP
)

// headerLen is the length in bytes of each extended header, by bit index.
var headerLen = [...]int{4, 8, 4, 4, 16, 28, 4, 8, 4, 4, 16}

// Request reports whether the opcode is sent by a requester (as opposed to
// an acknowledgement or read response), the packets whose PSNs count for
// retransmission.
func (o OpInfo) Request() bool { return o.request }

// OpInfo describes one BTH opcode.
type OpInfo struct {
	Name      string    // "RDMA WRITE First", as tshark names it
	Transport Transport // RC, UC, ...
	Class     Class
	Headers   Header // extended headers this opcode carries
	Known     bool   // false for reserved and vendor opcodes
	request   bool
}

// Op returns what is known about a BTH opcode.
func Op(opcode uint8) *OpInfo { return &opTable[opcode] }

// rcOps are the operations shared by RC, RD and XRC (and partly UC),
// indexed by the low five bits of the opcode.
var rcOps = [32]struct {
	name    string
	class   Class
	hdr     Header
	request bool
	uc      bool // also defined for UC
}{
	0x00: {"SEND First", ClassSend, 0, true, true},
	0x01: {"SEND Middle", ClassSend, 0, true, true},
	0x02: {"SEND Last", ClassSend, 0, true, true},
	0x03: {"SEND Last with Immediate", ClassSend, HdrImmDt, true, true},
	0x04: {"SEND Only", ClassSend, 0, true, true},
	0x05: {"SEND Only with Immediate", ClassSend, HdrImmDt, true, true},
	0x06: {"RDMA WRITE First", ClassWrite, HdrRETH, true, true},
	0x07: {"RDMA WRITE Middle", ClassWrite, 0, true, true},
	0x08: {"RDMA WRITE Last", ClassWrite, 0, true, true},
	0x09: {"RDMA WRITE Last with Immediate", ClassWrite, HdrImmDt, true, true},
	0x0a: {"RDMA WRITE Only", ClassWrite, HdrRETH, true, true},
	0x0b: {"RDMA WRITE Only with Immediate", ClassWrite, HdrRETH | HdrImmDt, true, true},
	0x0c: {"RDMA READ Request", ClassRead, HdrRETH, true, false},
	0x0d: {"RDMA READ Response First", ClassRead, HdrAETH, false, false},
	0x0e: {"RDMA READ Response Middle", ClassRead, 0, false, false},
	0x0f: {"RDMA READ Response Last", ClassRead, HdrAETH, false, false},
	0x10: {"RDMA READ Response Only", ClassRead, HdrAETH, false, false},
	0x11: {"Acknowledge", ClassAck, HdrAETH, false, false},
	0x12: {"ATOMIC Acknowledge", ClassAtomic, HdrAETH | HdrAtomicAckETH, false, false},
	0x13: {"CmpSwap", ClassAtomic, HdrAtomicETH, true, false},
	0x14: {"FetchAdd", ClassAtomic, HdrAtomicETH, true, false},
	0x16: {"SEND Last with Invalidate", ClassSend, HdrIETH, true, false},
	0x17: {"SEND Only with Invalidate", ClassSend, HdrIETH, true, false},
	0x1c: {"FLUSH", ClassFlush, HdrFETH | HdrRETH, true, false},
	0x1d: {"ATOMIC WRITE", ClassWrite, HdrRETH, true, false},
}

var opTable = buildOpTable()

func buildOpTable() (t [256]OpInfo) {
	for i := range t {
		tr := Transport(i >> 5)
		t[i] = OpInfo{Name: fmt.Sprintf("Reserved 0x%02x", i), Transport: tr}
	}
	for low, op := range rcOps {
		if op.name == "" {
			continue
		}
		for _, tr := range []Transport{RC, UC, RD, XRC} {
			if tr == UC && !op.uc {
				continue
			}
			if tr == RD && low >= 0x16 {
				continue // RD has no invalidate, FLUSH or ATOMIC WRITE
			}
			h := op.hdr
			switch {
			case tr == RD && op.request:
				h |= HdrRDETH | HdrDETH
			case tr == RD:
				h |= HdrRDETH
			case tr == XRC && op.request:
				h |= HdrXRCETH
			}
			t[int(tr)<<5|low] = OpInfo{Name: op.name, Transport: tr, Class: op.class, Headers: h, Known: true, request: op.request}
		}
	}
	t[0x55] = OpInfo{Name: "RESYNC", Transport: RD, Class: ClassOther, Headers: HdrRDETH | HdrDETH, Known: true, request: true}
	t[0x64] = OpInfo{Name: "SEND Only", Transport: UD, Class: ClassSend, Headers: HdrDETH, Known: true, request: true}
	t[0x65] = OpInfo{Name: "SEND Only with Immediate", Transport: UD, Class: ClassSend, Headers: HdrDETH | HdrImmDt, Known: true, request: true}
	t[0x81] = OpInfo{Name: "CNP", Transport: CNP, Class: ClassCNP, Headers: HdrCNPPad, Known: true}
	return t
}
