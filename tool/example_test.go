package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/talaria-agent/talaria/tool"
)

// WeatherArgs are the tool's arguments: the json tags name the properties,
// desc and jsonschema tags describe them, omitempty makes one optional.
type WeatherArgs struct {
	City  string `json:"city" desc:"city name, e.g. Lisbon"`
	Units string `json:"units,omitempty" jsonschema:"description=temperature units,enum=celsius|fahrenheit"`
}

// Weather is what the tool returns; it reaches the model as JSON.
type Weather struct {
	City        string  `json:"city"`
	Temperature float64 `json:"temperature"`
	Units       string  `json:"units"`
}

// A custom tool from a Go function: the schema comes from the argument
// struct, and wrong arguments are a typed *tool.ArgError written for the
// model before the function runs.
func ExampleFuncOf() {
	weather, err := tool.FuncOf(tool.Info{Name: "weather", Description: "Current weather of a city.", ReadOnly: true},
		func(ctx context.Context, in WeatherArgs) (Weather, error) {
			if in.Units == "" {
				in.Units = "celsius"
			}
			t := 21.5
			if in.Units == "fahrenheit" {
				t = 70.7
			}
			return Weather{City: in.City, Temperature: t, Units: in.Units}, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(weather.Info().Parameters))

	ctx := context.Background()
	res, err := weather.Run(ctx, json.RawMessage(`{"city":"Lisbon"}`))
	fmt.Println(res.Content, err)

	_, err = weather.Run(ctx, json.RawMessage(`{"city":"Lisbon","units":"kelvin"}`))
	var ae *tool.ArgError
	if errors.As(err, &ae) {
		fmt.Println(strings.Join(ae.Problems, "; "))
	}
	// Output:
	// {"type":"object","properties":{"city":{"type":"string","description":"city name, e.g. Lisbon"},"units":{"type":"string","description":"temperature units","enum":["celsius","fahrenheit"]}},"required":["city"],"additionalProperties":false}
	// {"city":"Lisbon","temperature":21.5,"units":"celsius"} <nil>
	// /units: must be one of "celsius", "fahrenheit", got string "kelvin"
}
