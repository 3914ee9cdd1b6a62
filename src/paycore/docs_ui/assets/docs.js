// Starts Swagger UI on the page's OpenAPI document. A file of its own, not an inline
// script: the page's Content-Security-Policy allows scripts from this origin only.
"use strict";
(function () {
  var root = document.getElementById("swagger-ui");
  // Relative to the page ({prefix}/docs), so any mount prefix or proxy path works.
  var url = new URL(root.getAttribute("data-openapi"), document.baseURI).href;
  window.ui = window.SwaggerUIBundle({
    url: url,
    domNode: root,
    deepLinking: true,
    validatorUrl: null,
  });
})();
