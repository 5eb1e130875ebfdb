/*
 * paimon-lab's JupyterLab extension: SQL syntax highlighting of %%paimon cells.
 *
 * A module-federation container written by hand (no bundler): JupyterLab loads this script,
 * calls init() with its share scope and get('./extension') for the plugin. The plugin takes
 * INotebookTracker from the shared @jupyterlab/notebook, so it is the application's own token.
 * A code cell whose first line starts with %%paimon gets the editor language text/x-sql
 * (JupyterLab's SQL mode); other code cells keep the notebook's language.
 */
(function () {
  'use strict';
  const NAME = 'paimon-lab';
  const SQL = 'text/x-sql';
  const MAGIC = /^\s*%%paimon(\s|$)/;
  let shareScope = null;

  function newest(versions) {
    const keys = Object.keys(versions || {});
    const parts = v => v.split(/[.-]/).map(x => (/^\d+$/.test(x) ? Number(x) : x));
    keys.sort((a, b) => {
      const pa = parts(a), pb = parts(b);
      for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
        if (pa[i] === pb[i]) continue;
        if (pa[i] === undefined) return -1;
        if (pb[i] === undefined) return 1;
        return typeof pa[i] === 'number' && typeof pb[i] === 'number' ? pa[i] - pb[i] : String(pa[i]).localeCompare(String(pb[i]));
      }
      return 0;
    });
    return keys.length ? versions[keys[keys.length - 1]] : null;
  }

  async function shared(pkg) {
    const entry = newest(shareScope && shareScope[pkg]);
    if (!entry) throw new Error(`${NAME}: JupyterLab shares no ${pkg}`);
    const factory = await entry.get();
    return factory();
  }

  function plugin(INotebookTracker, IEditorLanguageRegistry) {
    let languages = null;
    const tracked = new WeakSet();
    const watched = new WeakSet();

    function isPaimon(model) {
      return MAGIC.test(model.sharedModel.getSource().split('\n', 1)[0]);
    }

    function sync(notebook, model, languages) {
      const wanted = isPaimon(model) ? SQL : notebook.codeMimetype;
      if (!wanted || model.mimeType === wanted) return;
      if (wanted !== SQL) {
        model.mimeType = wanted;
        return;
      }
      // The editor loads the language of each mime type it is given and takes whichever load
      // finishes last: let the one it was just given (Python, when the kernel starts) finish first.
      const given = model.mimeType;
      Promise.resolve(given ? languages.getLanguage(given) : null)
        .catch(() => null)
        .then(() => setTimeout(() => {
          if (isPaimon(model) && model.mimeType !== SQL) model.mimeType = SQL;
        }, 0));
    }

    function track(notebook, model) {
      if (!model || model.type !== 'code' || tracked.has(model)) return;
      tracked.add(model);
      model.contentChanged.connect(() => sync(notebook, model, languages));
      // the notebook resets every cell's language when its kernel's language arrives
      model.mimeTypeChanged.connect(() => sync(notebook, model, languages));
      sync(notebook, model, languages);
    }

    function trackAll(notebook) {
      const cells = notebook.model && notebook.model.cells;
      if (!cells) return;
      for (let i = 0; i < cells.length; i++) track(notebook, cells.get(i));
    }

    function watch(panel) {
      const notebook = panel.content;
      const listen = () => {
        trackAll(notebook);
        if (notebook.model && !watched.has(notebook.model)) {
          watched.add(notebook.model);
          notebook.model.cells.changed.connect(() => trackAll(notebook));
        }
      };
      notebook.modelChanged.connect(listen);
      panel.context.ready.then(listen);
    }

    return {
      id: 'paimon-lab:sql-highlighting',
      description: 'SQL syntax highlighting of %%paimon cells',
      autoStart: true,
      requires: [INotebookTracker, IEditorLanguageRegistry],
      activate: (app, tracker, registry) => {
        languages = registry;
        tracker.forEach(watch);
        tracker.widgetAdded.connect((_, panel) => watch(panel));
      }
    };
  }

  const container = {
    init: scope => {
      shareScope = scope;
    },
    get: async module => {
      if (module !== './extension') throw new Error(`${NAME}: no module ${module}`);
      const notebook = await shared('@jupyterlab/notebook');
      const codemirror = await shared('@jupyterlab/codemirror');
      const made = plugin(notebook.INotebookTracker, codemirror.IEditorLanguageRegistry);
      return () => ({ __esModule: true, default: [made] });
    }
  };
  const registry = (window._JUPYTERLAB = window._JUPYTERLAB || {});
  registry[NAME] = container;
})();
