# The HTML flame graph page (`--format html`, `report --html`): web/flamegraph.html with
# d3 and d3-flame-graph from node_modules inlined, embedded in the binary by
# daemon/sink/flame_page.c (.incbin). node_modules comes from `make deps` (npm ci of
# package-lock.json); without it the build stops here, it never makes a page without them.
HTML_TEMPLATE := web/flamegraph.html
HTML_D3       := node_modules/d3/dist/d3.min.js
HTML_FLAME    := node_modules/d3-flame-graph/dist/d3-flamegraph.umd.min.js
HTML_PAGE     := $(B)/gen/flame_page.html

$(HTML_D3) $(HTML_FLAME):
	@echo "missing $@: run 'make deps' (installs the npm packages of package-lock.json)" >&2
	@exit 1

$(HTML_PAGE): $(HTML_TEMPLATE) $(HTML_D3) $(HTML_FLAME) mk/75-html.mk
	@echo "  PAGE    $@"
	$(Q)mkdir -p $(@D)
	$(Q)sed -e '\|/\*@D3_JS@\*/|{r $(HTML_D3)' -e 'd}' \
	        -e '\|/\*@FLAMEGRAPH_JS@\*/|{r $(HTML_FLAME)' -e 'd}' $< > $@.tmp
	$(Q)grep -q '^@PROFILE_JSON@$$' $@.tmp && ! grep -q '@D3_JS@\|@FLAMEGRAPH_JS@' $@.tmp
	$(Q)mv $@.tmp $@

$(B)/daemon/sink/flame_page.o: $(HTML_PAGE)
$(B)/daemon/sink/flame_page.o: ALL_CFLAGS += -DFLAME_PAGE_PATH='"$(HTML_PAGE)"'
