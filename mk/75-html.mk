# SPDX-License-Identifier: MIT
# The HTML flame graph page (`--format html`, `report --html`): web/flamegraph.html with
# d3 and d3-flame-graph inlined, embedded in the binary by daemon/sink/flame_page.c (.incbin).
# The two libraries are vendored in web/vendor/ (their licences beside them), not fetched at
# build time: the product builds offline from Debian's Build-Depends alone, and Debian has no
# d3-flame-graph (and only d3 5, which d3-flame-graph 5 does not run on). package-lock.json
# still pins them: `scripts/npm-deps.sh vendor` refreshes web/vendor/ from node_modules after
# a version bump, and tests/lint/test_web_vendor.sh fails while the two differ.
HTML_TEMPLATE := web/flamegraph.html
HTML_D3       := web/vendor/d3.min.js
HTML_FLAME    := web/vendor/d3-flamegraph.min.js
HTML_PAGE     := $(B)/gen/flame_page.html
PLAIN_TESTS   += tests/lint/test_web_vendor.sh

$(HTML_PAGE): $(HTML_TEMPLATE) $(HTML_D3) $(HTML_FLAME) mk/75-html.mk
	@echo "  PAGE    $@"
	$(Q)mkdir -p $(@D)
	$(Q)sed -e '\|/\*@D3_JS@\*/|{r $(HTML_D3)' -e 'd}' \
	        -e '\|/\*@FLAMEGRAPH_JS@\*/|{r $(HTML_FLAME)' -e 'd}' $< > $@.tmp
	$(Q)grep -q '^@PROFILE_JSON@$$' $@.tmp && ! grep -q '@D3_JS@\|@FLAMEGRAPH_JS@' $@.tmp
	$(Q)mv $@.tmp $@

$(B)/daemon/sink/flame_page.o: $(HTML_PAGE)
$(B)/daemon/sink/flame_page.o: ALL_CFLAGS += -DFLAME_PAGE_PATH='"$(HTML_PAGE)"'
