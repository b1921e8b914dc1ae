package memory_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/saucerhq/saucer/memory"
)

func TestMemory(t *testing.T) {
	var m memory.Memory
	if _, ok := m.Last(); ok {
		t.Fatal("empty memory has a last step")
	}
	m.AddNote("ignored: no step yet")
	m.Add(memory.Step{Step: 1, Status: "CONTINUE"})
	m.Add(memory.Step{Step: 2, Status: "PENDING"})
	m.AddNote("The user answered: yes")
	last, _ := m.Last()
	if m.Len() != 2 || last.Step != 2 || len(last.Notes) != 1 || len(m.Steps()[0].Notes) != 0 {
		t.Errorf("memory %+v", m.Steps())
	}
}

func TestBlackboardIsSafeForConcurrentUse(t *testing.T) {
	var b memory.Blackboard
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				b.AddNote(memory.Note{Subtask: fmt.Sprint(i, j)})
				b.Set(fmt.Sprint(i), fmt.Sprint(j))
				b.Notes()
			}
		}()
	}
	wg.Wait()
	if len(b.Notes()) != 400 {
		t.Errorf("%d notes", len(b.Notes()))
	}
	if v, ok := b.Get("3"); !ok || v != "49" {
		t.Errorf("Get = %q %v", v, ok)
	}
	notes := b.Notes()
	notes[0].Result = "changed"
	if b.Notes()[0].Result == "changed" {
		t.Error("Notes returned the blackboard's own slice")
	}
}
