package core

import (
	"fmt"
	"sort"
	"strings"
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

// RegisterAction registers under name, for every organization, an action of a kind whose
// configuration is its properties: a kind of this Environment with an Action form
// (svctype.StepKind.Action: custom-table and nway_match), which checks properties and says
// how they meet a step's. An embedding program declares its actions in code this way;
// an organization's own are stored through the /actions routes (Engine.CreateAction), as
// are the kinds that call other systems (http, db, llm), whose clients and secrets are the
// actions feature's. A kind a feature registers (custom-table) is in the Environment once
// the engine is assembled (engine.New).
func (env *Environment) RegisterAction(name, kind string, properties map[string]any) error {
	if name == "" || name == LoopStep {
		return fmt.Errorf("action name %q is not usable", name)
	}
	k, ok := env.Lookup(kind)
	if !ok || k.Action == nil {
		return fmt.Errorf("action kind %q is not available in this environment (%s)", kind, strings.Join(env.actionKinds(), ", "))
	}
	ak, err := k.Action(name, properties)
	if err != nil {
		return err
	}
	env.RegisterStepKind(name, ak)
	return nil
}

// actionKinds lists the kinds an action may be of (those with an Action form), sorted.
func (env *Environment) actionKinds() []string {
	env.mu.RLock()
	defer env.mu.RUnlock()
	var out []string
	for name, k := range env.kinds {
		if k.Action != nil {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
