package constellation

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/saucerhq/saucer/server/store"
)

func TestZZTimeline(t *testing.T) {
	want := os.Getenv("ZZ_CASE")
	if want == "" {
		t.Skip()
	}
	for _, sc := range loadSuite(t) {
		if sc.Name != want {
			continue
		}
		for range 2 {
			c := newCluster(t, store.NewMemory(), 50*time.Millisecond, sc.devices()...)
			start := time.Now()
			o := c.orchestrator(t, plannerFor(t, sc, 50*time.Millisecond), Options{MaxConcurrent: 8, OnEvent: func(e Event) {
				t.Logf("%6.1fms %s %s %s", float64(time.Since(start).Microseconds())/1000, e.Kind, e.Node, e.Status)
			}})
			g, err := o.Run(context.Background(), sc.Name)
			t.Logf("took %v %v %s", time.Since(start), err, g.Status)
		}
	}
}
