// A browser bundler reads this file (the "browser" condition of the ./server export) when a page
// imports @stratum/join/server, which is Node-only. The import below names no file, so the build
// stops on it, showing this sentence as what it could not resolve, in every bundler.
import "./@stratum/join/server is Node-only: in a browser, import @stratum/join (the browser-safe root entry) instead";
