// Command gpx_flamehouse is the backend of the Flamehouse Grafana datasource.
package main

import (
	"os"

	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/flamehouse/flamehouse/pkg/plugin"
)

// pluginID is the id in src/plugin.json (mage sets it at build time too).
var pluginID = "flamehouse-profiles-datasource"

func main() {
	if err := datasource.Manage(pluginID, plugin.NewDatasource, datasource.ManageOpts{}); err != nil {
		log.DefaultLogger.Error(err.Error())
		os.Exit(1)
	}
}
