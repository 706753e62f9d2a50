# Installing dial9: make install / uninstall, DKMS on this host, the
# Debian packages, and their tests.  Included by the top-level Makefile
# after lib/lib.mk; paths are relative to the repo root.
#
#   make install        library (shared with its soname, static), headers
#                       (<dial9.h>, <linux/dial9.h>), pkg-config file, the
#                       dial9 command and its man page: PREFIX (default
#                       /usr/local), DESTDIR, LIBDIR, INCLUDEDIR, BINDIR,
#                       MANDIR; DIAL9_S3=0 for a build without S3 upload
#   make uninstall      removes exactly what make install put there
#   make dkms-install   the module through DKMS for the running kernel
#                       (KVER=... for another); a second run upgrades or
#                       says it is installed
#   make dkms-uninstall
#   make install-udev   the udev rule and modules-load file (/etc)
#   make deb            Debian packages in build/deb/ (debian/), lintian
#   make test-packages  the packages installed, DKMS, linking, purge; make
#                       install into a DESTDIR; the build without S3
# docs/install.md says more.

MANDIR ?= $(PREFIX)/share/man
# What the module's DKMS source tree is made of, besides dkms.conf (with
# the version written in); Kbuild reads VERSION for MODULE_VERSION.
DKMS_SRC_FILES := Kbuild VERSION kmod uapi
DKMS_SRC := /usr/src/dial9-$(DIAL9_VERSION)
# dkms-install's kernel: the running one unless KVER is given (the
# Makefile's own default, the cloud headers', is for the tests).
DKMS_KVER := $(if $(filter command line environment override,$(origin KVER)),$(KVER),$(shell uname -r))

DEB_B := $(BUILD)/deb
PKG_T := $(BUILD)/tests/packaging

.PHONY: install uninstall dkms-src dkms-install dkms-uninstall install-udev \
	deb test-packages

# Relative to DESTDIR: what make install writes, and make uninstall removes.
INSTALLED := $(LIBDIR)/libdial9.so.$(LIB_VERSION) \
	$(LIBDIR)/libdial9.so.$(LIB_SOMAJOR) $(LIBDIR)/libdial9.so \
	$(LIBDIR)/libdial9.a $(LIBDIR)/pkgconfig/dial9.pc \
	$(INCLUDEDIR)/dial9.h $(INCLUDEDIR)/linux/dial9.h \
	$(BINDIR)/dial9 $(MANDIR)/man1/dial9.1

install: lib tools
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/linux \
		$(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 0644 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf libdial9.so.$(LIB_VERSION) \
		$(DESTDIR)$(LIBDIR)/libdial9.so.$(LIB_SOMAJOR)
	ln -sf libdial9.so.$(LIB_SOMAJOR) $(DESTDIR)$(LIBDIR)/libdial9.so
	install -m 0644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	$(LIB_PC_SED) >$(DESTDIR)$(LIBDIR)/pkgconfig/dial9.pc
	chmod 0644 $(DESTDIR)$(LIBDIR)/pkgconfig/dial9.pc
	sed -e 's|@DIAL9_VERSION_STRING@|"$(LIB_VERSION)"|' lib/include/dial9.h \
		>$(DESTDIR)$(INCLUDEDIR)/dial9.h
	chmod 0644 $(DESTDIR)$(INCLUDEDIR)/dial9.h
	install -m 0644 uapi/linux/dial9.h $(DESTDIR)$(INCLUDEDIR)/linux/
	install -m 0755 $(BUILD)/tools/dial9 $(DESTDIR)$(BINDIR)/
	install -m 0644 docs/dial9.1 $(DESTDIR)$(MANDIR)/man1/
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	@rmdir --ignore-fail-on-non-empty $(DESTDIR)$(INCLUDEDIR)/linux \
		$(DESTDIR)$(LIBDIR)/pkgconfig 2>/dev/null || true
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi

# The module's source as DKMS wants it, under DESTDIR (debian/rules and
# tests/dkms/build.sh too).
dkms-src:
	install -d $(DESTDIR)$(DKMS_SRC)
	find $(DKMS_SRC_FILES) -type d -exec install -d $(DESTDIR)$(DKMS_SRC)/{} \;
	find $(DKMS_SRC_FILES) -type f ! -name '*.o' ! -name '*.ko' \
		! -name '*.cmd' ! -name '*.mod*' \
		-exec install -m 0644 {} $(DESTDIR)$(DKMS_SRC)/{} \;
	sed -e 's|#MODULE_VERSION#|$(DIAL9_VERSION)|' dkms.conf \
		>$(DESTDIR)$(DKMS_SRC)/dkms.conf
	chmod 0644 $(DESTDIR)$(DKMS_SRC)/dkms.conf

dkms-install:
	packaging/dkms-install.sh install $(DIAL9_VERSION) $(DKMS_KVER) \
		"$(MAKE) --no-print-directory dkms-src"

dkms-uninstall:
	packaging/dkms-install.sh uninstall $(DIAL9_VERSION)

install-udev:
	install -D -m 0644 packaging/60-dial9.rules $(DESTDIR)/etc/udev/rules.d/60-dial9.rules
	install -D -m 0644 packaging/dial9.conf $(DESTDIR)/etc/modules-load.d/dial9.conf

# ---- Debian packages ----------------------------------------------------------
# dpkg-buildpackage in a copy of the tree (build/deb/dial9-VERSION), so
# that nothing it makes lands in the tree or beside it; debian/changelog
# is written there with DIAL9_VERSION (the VERSION file), and dh_dkms -V
# writes that version into dkms.conf.
deb:
	rm -rf $(DEB_B)
	mkdir -p $(DEB_B)/dial9-$(DIAL9_VERSION)
	packaging/copy-tree.sh $(DEB_B)/dial9-$(DIAL9_VERSION)
	packaging/changelog.sh $(DIAL9_VERSION) \
		>$(DEB_B)/dial9-$(DIAL9_VERSION)/debian/changelog
	cd $(DEB_B)/dial9-$(DIAL9_VERSION) && \
		DEB_BUILD_OPTIONS="parallel=$$(nproc) $$DEB_BUILD_OPTIONS" \
		dpkg-buildpackage -b -us -uc
	lintian --fail-on error \
		$(DEB_B)/dial9_$(DIAL9_VERSION)_*.changes
	@ls -1 $(DEB_B)/*.deb

# ---- tests ---------------------------------------------------------------------
# Every step in tests/packaging/; about two minutes on two cores.
test-packages: deps lib tools
	tests/packaging/run.sh $(DIAL9_VERSION) $(PKG_T)
