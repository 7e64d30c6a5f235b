package down

import (
	"context"

	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/runstate"
)

// Host is a host's agent as down uses it: typed calls, and the end of the
// session. engine/run's Host satisfies it.
type Host interface {
	Name() string
	rpc.Caller
	Close() error
}

// Connector reaches a host as state.json recorded it (its address, user,
// keys and bastions), with an agent named for runID. engine/run's
// DownConnector makes one of the run's connectors (SSH, as rlab run
// connects).
type Connector interface {
	Connect(ctx context.Context, h runstate.Host, runID string) (Host, error)
}
