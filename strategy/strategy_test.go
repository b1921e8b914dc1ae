package strategy_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/strategy"
)

func record(log *[]string, name string, phase strategy.Phase, err error) strategy.Strategy {
	return strategy.Func(name, phase, func(_ context.Context, pc *strategy.Context) error {
		*log = append(*log, name)
		return err
	})
}

func TestProcessorRunsPhasesInOrder(t *testing.T) {
	var log []string
	p, err := strategy.NewProcessor([]strategy.Entry{
		{Strategy: record(&log, "mem", strategy.MemoryUpdate, nil)},
		{Strategy: record(&log, "exec", strategy.ActionExecution, nil)},
		{Strategy: record(&log, "collect1", strategy.DataCollection, nil)},
		{Strategy: record(&log, "llm", strategy.LLMInteraction, nil)},
		{Strategy: record(&log, "collect2", strategy.DataCollection, nil)},
	})
	if err != nil {
		t.Fatal(err)
	}
	pc := &strategy.Context{}
	if err := p.Run(context.Background(), pc); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(log, ","); got != "collect1,collect2,llm,exec,mem" {
		t.Errorf("order %s", got)
	}
	if len(pc.Timings()) != 4 {
		t.Errorf("timings for %d phases", len(pc.Timings()))
	}
}

func TestFailFast(t *testing.T) {
	boom := errors.New("boom")
	var log []string
	p, _ := strategy.NewProcessor([]strategy.Entry{
		{Strategy: record(&log, "soft", strategy.DataCollection, boom), FailFast: false},
		{Strategy: record(&log, "hard", strategy.LLMInteraction, boom), FailFast: true},
		{Strategy: record(&log, "never", strategy.ActionExecution, nil)},
	})
	pc := &strategy.Context{}
	err := p.Run(context.Background(), pc)
	var se *strategy.StepError
	if !errors.As(err, &se) || se.Strategy != "hard" || se.Phase != strategy.LLMInteraction || !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if strings.Join(log, ",") != "soft,hard" {
		t.Errorf("ran %v", log)
	}
	if errs := pc.Errors(); len(errs) != 1 || !strings.Contains(errs[0].Error(), `"soft"`) {
		t.Errorf("kept errors %v", pc.Errors())
	}
}

func TestMiddlewareWrapsEveryStrategy(t *testing.T) {
	var log []string
	mw := func(tag string) strategy.Middleware {
		return func(next strategy.Handler) strategy.Handler {
			return func(ctx context.Context, pc *strategy.Context) error {
				log = append(log, tag+">"+pc.Running())
				err := next(ctx, pc)
				log = append(log, tag+"<"+pc.Running())
				return err
			}
		}
	}
	p, _ := strategy.NewProcessor([]strategy.Entry{
		{Strategy: record(&log, "a", strategy.DataCollection, nil)},
		{Strategy: record(&log, "b", strategy.MemoryUpdate, nil)},
	}, mw("outer"), mw("inner"))
	p.Run(context.Background(), &strategy.Context{})
	want := "outer>a,inner>a,a,inner<a,outer<a,outer>b,inner>b,b,inner<b,outer<b"
	if got := strings.Join(log, ","); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestCancelledBeforeAStrategy(t *testing.T) {
	var log []string
	ctx, cancel := context.WithCancel(context.Background())
	stopper := strategy.Func("stopper", strategy.DataCollection, func(context.Context, *strategy.Context) error {
		log = append(log, "stopper")
		cancel()
		return nil
	})
	p, _ := strategy.NewProcessor([]strategy.Entry{{Strategy: stopper}, {Strategy: record(&log, "after", strategy.LLMInteraction, nil)}})
	if err := p.Run(ctx, &strategy.Context{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if strings.Join(log, ",") != "stopper" {
		t.Errorf("ran %v", log)
	}
}

func TestTypedKeys(t *testing.T) {
	count := strategy.NewKey[int]("count")
	label := strategy.NewKey[string]("label")
	pc := &strategy.Context{}
	if _, ok := strategy.Get(pc, count); ok {
		t.Fatal("empty context has a value")
	}
	strategy.Set(pc, count, 3)
	strategy.Set(pc, label, "x")
	if v, ok := strategy.Get(pc, count); !ok || v != 3 {
		t.Errorf("count %v %v", v, ok)
	}
	if v, _ := strategy.Get(pc, label); v != "x" {
		t.Errorf("label %q", v)
	}
	pc.BeginStep(0, 2)
	if _, ok := strategy.Get(pc, count); ok {
		t.Error("values survive BeginStep")
	}
}

func TestRegistry(t *testing.T) {
	r := strategy.NewRegistry()
	for _, n := range []string{"ask", "discover", "execute", "observe", "remember"} {
		if !strings.Contains(strings.Join(r.Names(), ","), n) {
			t.Errorf("built-in %s missing", n)
		}
	}
	if err := r.Register("ask", func(map[string]any) (strategy.Strategy, error) { return nil, nil }); err == nil {
		t.Error("duplicate registration accepted")
	}
	no := false
	entries, err := r.Build([]strategy.Spec{{Name: "discover"}, {Name: "ask", FailFast: &no}})
	if err != nil || len(entries) != 2 || !entries[0].FailFast || entries[1].FailFast {
		t.Fatalf("build %+v %v", entries, err)
	}
	if _, err := r.Build([]strategy.Spec{{Name: "observe"}}); err == nil || !strings.Contains(err.Error(), "params.commands") {
		t.Errorf("observe without commands: %v", err)
	}
	if _, err := r.Build([]strategy.Spec{{Name: "nosuch"}}); err == nil || !strings.Contains(err.Error(), "remember") {
		t.Errorf("unknown strategy error should list the registered ones: %v", err)
	}
}

// A processor wraps each strategy in its middleware once, when it is
// made: a step does not build the chains again (a replayed step spent a
// tenth of its allocations on them).
func TestMiddlewareWrapsOncePerProcessor(t *testing.T) {
	var log []string
	wraps := 0
	mw := func(next strategy.Handler) strategy.Handler {
		wraps++
		return next
	}
	p, _ := strategy.NewProcessor([]strategy.Entry{
		{Strategy: record(&log, "a", strategy.DataCollection, nil)},
		{Strategy: record(&log, "b", strategy.MemoryUpdate, nil)},
	}, mw)
	for range 5 {
		if err := p.Run(context.Background(), &strategy.Context{}); err != nil {
			t.Fatal(err)
		}
	}
	if wraps != 2 || len(log) != 10 {
		t.Errorf("%d wraps for 2 strategies over 5 steps (%d runs); want 2 (10 runs)", wraps, len(log))
	}
}
