package kinds

// Workload is one workload instance as the lab declares it and its op
// runs it: its names, its tool and its option values. The lab model
// (engine/lab.Workload, with its references to hosts and rxe blocks and
// its expects) and the ops (steps.Workload, with those references
// resolved to names) both embed it, so the run hands it from one to the
// other whole (engine/run stepWorkload) instead of copying fields: a new
// workload attribute is one field here (or in Options) and one rule in the
// descriptor.
type Workload struct {
	Name  string // reference form, e.g. write_bw or bw["ana"]
	Slug  string // filesystem-safe, unique: used in agent handles and file names
	Index int    // position in file order
	Tool  string // a described tool (Lookup)

	Options
}
