package viz

import _ "embed"

// echartsVersion is the version of the vendored echarts runtime; it must
// match ECHARTS_VERSION in assets/refresh.sh.
const echartsVersion = "5.6.0"

// echartsJS is dist/echarts.min.js from the npm package echarts@5.6.0,
// unmodified. It contains no "</script", so it can be inlined in a <script>
// element as is.
//
//go:embed assets/echarts.min.js
var echartsJS string
