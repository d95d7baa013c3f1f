// Package agent will hold the bounded ReAct loop (Model interface, tools, budgets, trace,
// memory). It is empty until the agents issue lands; `loop` with `mode: react` is warned
// about at create time and fails clearly at run time meanwhile.
package agent
