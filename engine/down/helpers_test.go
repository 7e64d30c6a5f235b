package down

import (
	"context"

	"github.com/rlab-dev/rlab/engine/runstate"
)

// connectFunc adapts a function to Connector.
type connectFunc func(ctx context.Context, h runstate.Host, runID string) (Host, error)

func (f connectFunc) Connect(ctx context.Context, h runstate.Host, runID string) (Host, error) {
	return f(ctx, h, runID)
}
