package core

import (
	"fmt"
	"sort"
	"sync"

	"github.com/svcflow/svcflow/engine/steps"
	"github.com/svcflow/svcflow/engine/svctype"
)

// LoopStep is the `loop` primitive. The executor runs it itself (a foreach checkpoints per
// element, which only the executor can do), so it is not an entry of an Environment.
const LoopStep = "loop"

// Environment is the registry of step kinds an engine runs: a value, not a global, so a test
// can build an empty one and an embedding program can add its own kinds.
type Environment struct {
	mu    sync.RWMutex
	kinds map[string]svctype.StepKind
}

// NewEmptyEnvironment returns an environment with no step kinds at all.
func NewEmptyEnvironment() *Environment {
	return &Environment{kinds: map[string]svctype.StepKind{}}
}

// NewEnvironment returns an environment with every built-in step kind registered.
func NewEnvironment() *Environment {
	env := NewEmptyEnvironment()
	for name, kind := range steps.Builtins() {
		env.RegisterStepKind(name, kind)
	}
	return env
}

// RegisterStep adds (or replaces) a step kind run by fn.
func (env *Environment) RegisterStep(kind string, fn svctype.StepFunc) {
	env.RegisterStepKind(kind, svctype.StepKind{Run: fn})
}

// RegisterStepKind adds (or replaces) a step kind with its create-time validation.
func (env *Environment) RegisterStepKind(kind string, k svctype.StepKind) {
	env.mu.Lock()
	defer env.mu.Unlock()
	env.kinds[kind] = k
}

// Lookup returns the step kind registered under name.
func (env *Environment) Lookup(name string) (svctype.StepKind, bool) {
	env.mu.RLock()
	defer env.mu.RUnlock()
	k, ok := env.kinds[name]
	return k, ok
}

// Kinds lists the registered kind names, sorted.
func (env *Environment) Kinds() []string {
	env.mu.RLock()
	defer env.mu.RUnlock()
	names := make([]string, 0, len(env.kinds))
	for n := range env.kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// RegisterAction registers an action of a kind whose code ships with the engine, under
// name, so that name works as a step type (and, later, as an agent tool). Until the
// /actions routes exist this is how an embedding program declares one. Kinds available
// now: nway_match (properties: a complete nway_match configuration).
func (env *Environment) RegisterAction(name, kind string, properties map[string]any) error {
	if name == "" || name == LoopStep {
		return fmt.Errorf("action name %q is not usable", name)
	}
	switch kind {
	case steps.NWayMatch:
		k, err := steps.NWayAction(properties)
		if err != nil {
			return err
		}
		env.RegisterStepKind(name, k)
		return nil
	}
	return fmt.Errorf("action kind %q is not available in this build (nway_match is)", kind)
}
