package fsm_test

import (
	"context"
	"fmt"

	"github.com/saucerhq/saucer/fsm"
)

func Example() {
	ctx := context.Background()
	m := fsm.New(fsm.App)
	for _, reported := range []string{"continue", "confirm", "finish", "continue"} {
		next, err := fsm.ParseState(reported)
		if err != nil {
			fmt.Println(err)
			continue
		}
		if err := m.Go(ctx, next); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println(m.History(), m.Terminal())
	// Output:
	// app agent: cannot go from FINISH to CONTINUE (FINISH is final)
	// [CONTINUE CONTINUE CONFIRM FINISH] true
}
