package contracttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"go.yaml.in/yaml/v3"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Events checks event payloads against the webhooks section of a committed OpenAPI 3.1
// document: the payload schema its webhook declares for the event. It is the contract test
// of webhooks, under every test that builds an engine (WatchEvents).
type Events struct {
	file    string
	once    sync.Once
	doc     []byte // the document, as JSON
	parsed  map[string]any
	err     error
	mu      sync.Mutex
	schemas map[string]*jsonschema.Schema
}

// NewEvents is the webhooks contract of the 3.1 document at file.
func NewEvents(file string) *Events {
	return &Events{file: file, schemas: map[string]*jsonschema.Schema{}}
}

// runtimeEvents is the runtime's committed document, openapi/openapi.yaml, found from the
// test's working directory (any package of the module).
var runtimeEvents = sync.OnceValue(func() *Events {
	dir, err := os.Getwd()
	for err == nil {
		if _, statErr := os.Stat(filepath.Join(dir, "go.mod")); statErr == nil {
			return NewEvents(filepath.Join(dir, "openapi", "openapi.yaml"))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return NewEvents("openapi/openapi.yaml")
})

const docURL = "file:///openapi.json"

func (c *Events) load() error {
	c.once.Do(func() {
		raw, err := os.ReadFile(c.file)
		if err != nil {
			c.err = err
			return
		}
		var doc any
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			c.err = err
			return
		}
		c.parsed, _ = doc.(map[string]any)
		c.doc, c.err = json.Marshal(doc)
	})
	return c.err
}

// schema compiles the payload schema of event's webhook.
func (c *Events) schema(event string) (*jsonschema.Schema, error) {
	s, err := c.compile(webhookPointer(event) + "/requestBody/content/application~1json/schema/allOf/1/properties/payload")
	if err != nil {
		return nil, fmt.Errorf("%s declares no payload for %s: %w", c.file, event, err)
	}
	return s, nil
}

// webhookPointer is the JSON pointer of event's webhook operation.
func webhookPointer(event string) string {
	return "#/webhooks/" + strings.ReplaceAll(strings.ReplaceAll(event, "~", "~0"), "/", "~1") + "/post"
}

// compile compiles the schema at ptr (a fragment, #/...) of the document, once.
func (c *Events) compile(ptr string) (*jsonschema.Schema, error) {
	if err := c.load(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.schemas[ptr]; ok {
		return s, nil
	}
	comp := jsonschema.NewCompiler()
	comp.Draft = jsonschema.Draft2020
	comp.AssertFormat = true
	if err := comp.AddResource(docURL, bytes.NewReader(c.doc)); err != nil {
		return nil, err
	}
	s, err := comp.Compile(docURL + ptr)
	if err != nil {
		return nil, err
	}
	c.schemas[ptr] = s
	return s, nil
}

// CheckDelivery returns why a request a receiver got is not a delivery as the document
// declares it, or nil: the body against WebhookDelivery (the envelope), its event a declared
// webhook, and the headers against that webhook's parameters (the required ones present,
// each one's format). The payload itself is checked where it is emitted (Watch): a
// registration's auto_payload may add keys to it here.
func (c *Events) CheckDelivery(header http.Header, body []byte) error {
	envelope, err := c.compile("#/components/schemas/WebhookDelivery")
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	if err := envelope.Validate(v); err != nil {
		return fmt.Errorf("body: %#v", err)
	}
	event, _ := v.(map[string]any)["event"].(string)
	webhooks, _ := c.parsed["webhooks"].(map[string]any)
	hook, _ := webhooks[event].(map[string]any)
	post, _ := hook["post"].(map[string]any)
	if post == nil {
		return fmt.Errorf("event %q is not a webhook of %s", event, c.file)
	}
	params, _ := post["parameters"].([]any)
	for i, p := range params {
		param, _ := p.(map[string]any)
		name, _ := param["name"].(string)
		values := header.Values(name)
		if len(values) == 0 {
			if required, _ := param["required"].(bool); required {
				return fmt.Errorf("header %s is missing", name)
			}
			continue
		}
		s, err := c.compile(fmt.Sprintf("%s/parameters/%d/schema", webhookPointer(event), i))
		if err != nil {
			return err
		}
		if err := s.Validate(values[0]); err != nil {
			return fmt.Errorf("header %s: %q: %v", name, values[0], err)
		}
	}
	return nil
}

// Check returns why payload is not what the document declares for event, or nil. An event
// the catalogue does not know (one a registered step kind emits) is not checked.
func (c *Events) Check(event string, payload []byte) error {
	if _, ok := events.Lookup(event); !ok {
		return nil
	}
	s, err := c.schema(event)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(payload, &v); err != nil {
		return fmt.Errorf("payload is not JSON: %w", err)
	}
	if err := s.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("%#v", ve)
		}
		return err
	}
	return nil
}

// Watch checks every event eng emits while t runs against c; the first payloads that do
// not conform fail t when it ends.
func (c *Events) Watch(t testing.TB, eng *engine.Engine) {
	t.Helper()
	var (
		mu   sync.Mutex
		bad  []string
		seen = map[string]bool{}
	)
	eng.ObserveEvents(func(e svctype.Event) {
		err := c.Check(e.Event, e.Payload)
		if err == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !seen[e.Event] && len(bad) < 10 {
			seen[e.Event] = true
			bad = append(bad, fmt.Sprintf("%s payload %.500s: %v", e.Event, e.Payload, err))
		}
	})
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, b := range bad {
			t.Errorf("contract: an emitted event does not conform to its webhook in %s: %s", c.file, b)
		}
	})
}

// WatchEvents checks every event eng emits while t runs against the runtime's committed
// document (openapi/openapi.yaml): the harnesses that build engines for tests call it.
func WatchEvents(t testing.TB, eng *engine.Engine) { runtimeEvents().Watch(t, eng) }

// RuntimeEvents is the webhooks contract of the runtime's committed document
// (openapi/openapi.yaml), for the tests' receivers (CheckDelivery).
func RuntimeEvents() *Events { return runtimeEvents() }
